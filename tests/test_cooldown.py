"""The budget-fitted cooldown (train/cooldown.py): its schedule against the formula by hand, the agreed
vote that starts it, and a run on the clock whose plan survives a resume."""

import math
import re
import time

import pytest

from t2t_jax.config import load_config
from t2t_jax.train.control import Control
from t2t_jax.train.cooldown import CooldownPlan, budget_start_seconds, step_keyed_start
from t2t_jax.train.history import read_history
from t2t_jax.train.loop import train
from t2t_jax.train.schedule import make_schedule

SPEC = "constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size"


def rsqrt(s, constant=2.0, warmup=100, d=256):
    return constant * d**-0.5 * min(s**-0.5, s * warmup**-1.5)


@pytest.mark.parametrize("s", [1, 700, 701, 850, 1000])
def test_a_cooldown_of_its_own_length_starts_after_its_start_step(s):
    """A plan (700, 1000): updates 1..700 at the rsqrt rate, update s after at (1000 - s + 1) / 300 of it."""
    schedule = make_schedule(
        SPEC + "*linear_cooldown", constant=2.0, warmup_steps=100, d_model=256, total_steps=1000, cooldown_steps=300
    )
    assert math.isclose(float(schedule(s - 1)), rsqrt(s) * min(1.0, (1000 - s + 1) / 300), rel_tol=1e-5)


def test_the_plan_buys_the_remaining_fraction_of_the_budget_at_the_rate_so_far():
    assert CooldownPlan.started_at(700, 0.3, 4600) == CooldownPlan(700, 1000)  # 700 · 0.3 / 0.7 = 300 more
    assert CooldownPlan.started_at(2799, 0.3, 4000) == CooldownPlan(2799, 3999)  # never past train.steps
    assert CooldownPlan.started_at(3000, 0.3, 4000) is None  # past the step-keyed start 2800
    assert CooldownPlan.from_json(CooldownPlan(5, 9).to_json()) == CooldownPlan(5, 9)
    assert step_keyed_start(0.3, 4600) == 3220
    assert CooldownPlan.started_at(3220, 0.3, 4600) is None  # the step-keyed cooldown has begun: no plan


def test_the_time_start_applies_only_to_a_budgeted_linear_cooldown_that_asks_for_it():
    config = load_config("multi30k")
    assert budget_start_seconds(config.optimizer, config.train) == pytest.approx(60 * 85 * 0.7)
    for key, value in [("cooldown_by_budget", False), ("schedule", SPEC), ("cooldown_fraction", 1.0)]:
        changed = load_config("multi30k", [f"--config.optimizer.{key}={value}"])
        assert budget_start_seconds(changed.optimizer, changed.train) is None, key
    unbudgeted = load_config("multi30k", ["--config.train.max_minutes=0"])
    assert budget_start_seconds(unbudgeted.optimizer, unbudgeted.train) is None


class _NoSignal:
    number = 0


def test_the_cooldown_vote_comes_due_at_its_time():
    def control(cool_at):
        return Control(
            every_steps=0,
            every_minutes=0,
            sync_every=1,
            final_step=100,
            deadline=None,
            preempted=_NoSignal(),
            cool_at=cool_at,
        )

    assert control(time.perf_counter() - 1).decide(3).cool
    assert not control(time.perf_counter() + 3600).decide(3).cool
    assert not control(None).decide(3).cool


@pytest.mark.slow
def test_a_run_on_the_clock_cools_down_to_zero_and_a_resume_keeps_its_plan(tmp_path):
    """Smoke model, 24 s budget, fraction 0.5, train.steps far away: the cooldown starts by time at some step
    S, ends at 2·S; every logged rate matches the formula; a resume with more budget trains on to 2·S exactly
    (without the saved plan it would start a second cooldown from the clock)."""
    args = [
        "--config.train.steps=100000",
        "--config.train.max_minutes=0.4",
        "--config.optimizer.schedule=" + SPEC + "*linear_cooldown",
        "--config.optimizer.cooldown_fraction=0.5",
        "--config.optimizer.cooldown_by_budget=True",
        "--config.optimizer.warmup_steps=50",
        "--config.train.log_every=1",
        "--config.train.eval_every=100000",
        "--config.checkpoint.every_steps=0",
        "--config.checkpoint.every_minutes=0",
        "--config.data.batch_tokens=256",
    ]
    lines = []
    first = train(load_config("smoke", args), str(tmp_path), printer=lambda *a, **k: lines.append(" ".join(a)))
    started = re.search(r"cooldown started by the time budget at step (\d+) .* to 0 at step (\d+)", "\n".join(lines))
    assert started, "\n".join(lines)
    start, end = int(started.group(1)), int(started.group(2))
    assert end == 2 * start and first["steps"] <= end
    assert first["stopped"] == ("steps" if first["steps"] == end else "budget")

    lines.clear()
    again = train(
        load_config("smoke", args[:1] + ["--config.train.max_minutes=2"] + args[2:]),
        str(tmp_path),
        printer=lambda *a, **k: lines.append(" ".join(a)),
    )
    assert again["steps"] == end and again["stopped"] == "steps", "\n".join(lines)
    assert "cooldown started" not in "\n".join(lines)

    rates = {h["step"]: h["lr"] for h in read_history(tmp_path) if h["split"] == "train"}
    assert set(rates) == set(range(1, end + 1))
    for s, lr in rates.items():
        want = rsqrt(s, constant=0.5, warmup=50, d=64) * min(1.0, (end - s + 1) / (end - start))
        assert math.isclose(lr, want, rel_tol=1e-5), (s, lr, want)
