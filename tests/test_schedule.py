"""The §5.3 learning-rate schedule against the formula evaluated by hand."""

import math

import pytest

from t2t_jax.errors import ConfigError
from t2t_jax.train.schedule import make_schedule

SPEC = "constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size"


@pytest.mark.parametrize("s", [1, 4000, 16000])
def test_paper_schedule(s):
    schedule = make_schedule(SPEC, constant=1.0, warmup_steps=4000, d_model=512)
    expected = 512**-0.5 * min(s**-0.5, s * 4000**-1.5)
    assert math.isclose(float(schedule(s - 1)), expected, rel_tol=1e-5)


def test_first_update_is_not_zero():
    schedule = make_schedule(SPEC, constant=1.0, warmup_steps=4000, d_model=512)
    assert float(schedule(0)) == pytest.approx(512**-0.5 * 4000**-1.5, rel=1e-5)


@pytest.mark.parametrize("s", [1, 8000, 20000])
def test_t2t_preset(s):
    schedule = make_schedule(SPEC, constant=2.0, warmup_steps=8000, d_model=512)
    expected = 2.0 * 512**-0.5 * min(s**-0.5, s * 8000**-1.5)
    assert math.isclose(float(schedule(s - 1)), expected, rel_tol=1e-5)


def test_unknown_factor_is_named():
    with pytest.raises(ConfigError, match="rsqrt_decayy"):
        make_schedule("constant*rsqrt_decayy", constant=1.0, warmup_steps=10, d_model=8)


@pytest.mark.parametrize("s", [1, 700, 701, 850, 1000])
def test_linear_cooldown_takes_the_rate_to_zero_over_the_last_steps(s):
    """Updates 1..700 of 1000 at the rsqrt rate; update s of the last 300 at (1000 - s + 1) / 300 of it."""
    schedule = make_schedule(
        SPEC + "*linear_cooldown", constant=2.0, warmup_steps=100, d_model=256, cooldown_fraction=0.3, total_steps=1000
    )
    rsqrt = 2.0 * 256**-0.5 * min(s**-0.5, s * 100**-1.5)
    expected = rsqrt * min(1.0, (1000 - s + 1) / 300)
    assert math.isclose(float(schedule(s - 1)), expected, rel_tol=1e-5)


def test_linear_cooldown_needs_its_length():
    with pytest.raises(ConfigError, match="cooldown_fraction = 0.0"):
        make_schedule(SPEC + "*linear_cooldown", constant=1.0, warmup_steps=10, d_model=8, total_steps=100)
    with pytest.raises(ConfigError, match="cooldown_fraction = 1.5"):
        make_schedule(
            SPEC + "*linear_cooldown", constant=1.0, warmup_steps=10, d_model=8, cooldown_fraction=1.5, total_steps=100
        )
