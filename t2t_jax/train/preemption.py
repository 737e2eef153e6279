"""SIGTERM / SIGINT -> finish the current step, save, exit 0 (instead of losing work)."""
from __future__ import annotations

import contextlib
import signal


class PreemptionFlag:
    def __init__(self):
        self.signal_name = None

    def __bool__(self):
        return self.signal_name is not None

    def _handler(self, signum, _frame):
        self.signal_name = signal.Signals(signum).name


@contextlib.contextmanager
def preemption_flag():
    """A flag set by SIGTERM/SIGINT while the block runs (previous handlers restored after)."""
    flag = PreemptionFlag()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for sig in previous:
            signal.signal(sig, flag._handler)
    except ValueError:  # not the main thread: no signal handling
        previous = {}
    try:
        yield flag
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
