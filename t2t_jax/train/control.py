"""One agreed control decision per step boundary: save now? stop now, and why? start the cooldown?

Every input that differs between processes — each host's clock (``checkpoint.every_minutes``, the
``train.max_minutes`` budget, the budget-fitted cooldown of train/cooldown.py) and each host's signals
(preemption arrives host by host) — is voted on in one small all-gather every ``parallel.sync_every``
steps; every process then takes the *same* decision from the same gathered votes (any host's vote counts).
Inputs that are already identical everywhere need no vote: the step count (``checkpoint.every_steps``, the
last step) and the globally reduced loss (the non-finite stop and skip, see train/step.py).  So all
processes save the same steps and stop at the same step, and a save — collective in orbax — is entered by
all of them or by none.
"""

from __future__ import annotations

import dataclasses
import signal
import time

import numpy as np

from t2t_jax import distributed


@dataclasses.dataclass(frozen=True)
class Decision:
    save: bool
    stop: str | None = None  # None, "budget" or the name of the signal that some process received
    cool: bool = False  # the time for a budget-fitted cooldown to start has come (train/cooldown.py)


class Control:
    def __init__(
        self,
        *,
        every_steps: int,
        every_minutes: float,
        sync_every: int,
        final_step: int,
        deadline: float | None,
        preempted,
        cool_at: float | None = None,
    ):
        """``deadline``: time.perf_counter() at which the time budget ends (None: no budget);
        ``preempted``: this process's PreemptionFlag (train/preemption.py); ``cool_at``: time.perf_counter()
        from which a budget-fitted cooldown is due (None: none)."""
        self.every_steps, self.every_minutes = every_steps, every_minutes
        self.sync_every, self.final_step = max(int(sync_every), 1), final_step
        self.deadline, self.preempted, self.cool_at = deadline, preempted, cool_at
        self.last_save = time.monotonic()

    def votes(self) -> np.ndarray:
        """This process's [time for a timed save, budget spent, signal number or 0, cooldown due]."""
        timed = bool(self.every_minutes) and time.monotonic() - self.last_save >= 60 * self.every_minutes
        now = time.perf_counter()
        spent = self.deadline is not None and now >= self.deadline
        cool = self.cool_at is not None and now >= self.cool_at
        return np.asarray([timed, spent, self.preempted.number, cool], np.int32)

    def decide(self, step: int) -> Decision:
        """The decision at the boundary after ``step``; a collective on every process at sync steps."""
        save = (bool(self.every_steps) and step % self.every_steps == 0) or step == self.final_step
        stop, cool = None, False
        if step % self.sync_every == 0 or distributed.single_process():
            timed, spent, number, cool = distributed.allgather_rows(self.votes()).max(axis=0)
            stop = signal.Signals(int(number)).name if number else ("budget" if spent else None)
            save = save or bool(timed) or stop is not None
        if save:
            self.last_save = time.monotonic()
        return Decision(save=save, stop=stop, cool=bool(cool))
