"""A linear cooldown that fits the time budget (``optimizer.cooldown_by_budget``).

Why: the main job's budget is minutes (``train.max_minutes``) but its schedule is steps (``train.steps``).
On a machine 40 % slower than the one that set train.steps (2-core CPUs of one model name vary that much) the budget
stops the run early in the step-keyed cooldown or before it, at a still-high rate.

With the option on, the cooldown starts at the first agreed step boundary (train/control.py votes on the
clocks) at which ``1 - cooldown_fraction`` of the budget is spent, unless its step-keyed start came first.
Started at step S, it is sized from the rate so far: the remaining ``cooldown_fraction`` of the budget buys
S·f/(1-f) more steps, so the run ends at E = S + S·f/(1-f) (< train.steps) at rate 0.  (S, E) is saved
with every checkpoint: every resume, and every process, trains on the same schedule.  A machine fast enough
to reach the step-keyed start in time never triggers it, and trains exactly as without the option.
"""

from __future__ import annotations

import dataclasses

from t2t_jax.train.schedule import cooldown_length, factor_names


@dataclasses.dataclass(frozen=True)
class CooldownPlan:
    start: int  # the last update at the full scheduled rate
    end: int  # the update that reaches rate 0: the run's last step

    @classmethod
    def started_at(cls, step: int, fraction: float, total_steps: int) -> CooldownPlan | None:
        """The plan for a time start at ``step``; None once the step-keyed cooldown has begun."""
        if step >= step_keyed_start(fraction, total_steps):
            return None
        # step < (1 - f)·T, so step + step·f/(1 - f) < T: the plan ends within train.steps
        return cls(step, step + max(round(step * fraction / (1.0 - fraction)), 1))

    @property
    def steps(self) -> int:
        return self.end - self.start

    def to_json(self) -> list[int]:
        return [self.start, self.end]

    @classmethod
    def from_json(cls, value) -> CooldownPlan | None:
        return None if value is None else cls(int(value[0]), int(value[1]))

    def announcement(self, minutes: float, budget_minutes: float) -> str:
        return (
            f"cooldown started by the time budget at step {self.start} ({minutes:.1f} of {budget_minutes:g} min, "
            f"before its step-keyed start): the rate falls linearly to 0 at step {self.end} (train/cooldown.py)"
        )


def budget_start_seconds(optimizer, train) -> float | None:
    """Seconds of training after which the cooldown starts by time; None when the option does not apply
    (off, no ``*linear_cooldown``, no time budget, or a fraction that leaves nothing to fit)."""
    if not (optimizer.cooldown_by_budget and "linear_cooldown" in factor_names(optimizer.schedule)):
        return None
    if not train.max_minutes > 0:
        return None
    if not 0.0 < optimizer.cooldown_fraction < 1.0:
        return None
    return 60.0 * train.max_minutes * (1.0 - optimizer.cooldown_fraction)


def step_keyed_start(fraction: float, total_steps: int) -> int:
    """The last update before the step-keyed cooldown of make_schedule (train/schedule.py)."""
    return total_steps - cooldown_length(fraction, total_steps)
