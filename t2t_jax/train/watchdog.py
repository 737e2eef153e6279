"""A watchdog for waits on other processes: a step's all-reduce, the control agreement, a collective save.

When a host dies (kill -9, a lost machine) the survivors block in the next collective; gloo, NCCL or the
coordination service may take many minutes to notice, or never.  The loop marks each wait with
``with watchdog.waiting("what")``; a daemon thread ends the process with one error line naming the wait once
it lasts longer than ``parallel.watchdog_seconds`` — so a scheduler sees a failed job and restarts it, and
the rerun resumes from the last complete checkpoint.  Waits that legitimately take long (the first step's
compilation, dev evaluation, decoding) are simply not marked.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable

from t2t_jax.errors import EXIT_PEER  # EX_TEMPFAIL: rerunning the job is the remedy


class Watchdog:
    def __init__(self, seconds: float, context: Callable[[], str] = lambda: ""):
        """``seconds`` <= 0 disables it; ``context()`` adds a clause to the message (the last checkpoint)."""
        self.seconds = float(seconds)
        self.context = context
        self._wait: tuple[str, float] | None = None  # (what, since): one tuple, swapped atomically
        self._stop = threading.Event()
        self._thread = None
        if self.seconds > 0:
            self._thread = threading.Thread(target=self._watch, name="t2t-watchdog", daemon=True)
            self._thread.start()

    @contextlib.contextmanager
    def waiting(self, what: str):
        self._wait = (what, time.monotonic())
        try:
            yield
        finally:
            self._wait = None

    def _watch(self) -> None:
        while not self._stop.wait(min(1.0, self.seconds / 4)):
            wait = self._wait
            if wait is None or time.monotonic() - wait[1] <= self.seconds:
                continue
            what, since = wait
            try:
                context = self.context()
            except Exception:  # noqa: BLE001 - the message must go out whatever the context does
                context = ""
            os.write(
                2,
                (
                    f"error: waited {time.monotonic() - since:.0f} s (parallel.watchdog_seconds = "
                    f"{self.seconds:g}) for {what}: another process has probably died or hung; exiting. "
                    f"Rerun every process to resume{context}\n"
                ).encode(),
            )
            os._exit(EXIT_PEER)

    def close(self) -> None:
        self._stop.set()
