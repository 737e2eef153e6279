"""Learning-rate schedules as a product of named factors (T2T style).

§5.3: lr(s) = d^-0.5 · min(s^-0.5, s · w^-1.5) is
``constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size`` with constant 1, w 4000;
T2T's preset is the same string with constant 2, w 8000.  ``s`` is the optax
update count + 1 so the first update does not have learning rate 0.

``*linear_cooldown`` appended takes the rate linearly to 0 over the last
``cooldown_fraction`` of ``total_steps`` (train.steps): a short run then ends at a
low rate instead of rsqrt's still-high one, which checkpoint averaging only
partly makes up for (a fixed-budget run knows its last step; T2T's
``linear_decay`` factor does the same).  ``cooldown_steps`` overrides its length:
a cooldown started by the time budget (train/cooldown.py) ends at its own
``total_steps`` after its own length.
"""

from __future__ import annotations

import jax.numpy as jnp

from t2t_jax.errors import ConfigError


def factor_names(spec: str) -> list[str]:
    """The factor names of a schedule spec such as ``constant*linear_warmup*rsqrt_decay``."""
    return [name.strip() for name in spec.split("*")]


def cooldown_length(fraction: float, total_steps: int) -> int:
    """Updates in the step-keyed linear cooldown: the last ``fraction`` of ``total_steps``, at least one."""
    return max(round(fraction * total_steps), 1)


def _factors(constant: float, warmup_steps: int, d_model: int, total_steps: int, cooldown_steps: int):
    return {
        "constant": lambda s: jnp.float32(constant),
        "linear_warmup": lambda s: jnp.minimum(1.0, s / warmup_steps),
        "rsqrt_decay": lambda s: jnp.reciprocal(jnp.sqrt(jnp.maximum(s, warmup_steps))),
        "rsqrt_hidden_size": lambda s: jnp.float32(d_model) ** -0.5,
        # update s (1-based) of total_steps: 1 until the last cooldown_steps, then (total - s + 1) / cooldown
        "linear_cooldown": lambda s: jnp.clip((total_steps - s + 1.0) / cooldown_steps, 0.0, 1.0),
    }


def make_schedule(
    spec: str,
    *,
    constant: float,
    warmup_steps: int,
    d_model: int,
    cooldown_fraction: float = 0.0,
    total_steps: int = 0,
    cooldown_steps: int | None = None,
):
    """A function optax-count -> learning rate for ``spec`` (factor names joined by '*')."""
    if warmup_steps <= 0:
        raise ConfigError(f"optimizer.warmup_steps = {warmup_steps}: must be positive")
    explicit = cooldown_steps is not None  # a plan's length (train/cooldown.py), else the fraction's
    cooldown_steps = max(cooldown_steps, 1) if explicit else cooldown_length(cooldown_fraction, total_steps)
    available = _factors(constant, warmup_steps, d_model, total_steps, cooldown_steps)
    names = factor_names(spec)
    unknown = [name for name in names if name not in available]
    if unknown:
        raise ConfigError(f"optimizer.schedule: unknown factor(s) {unknown}; known: {sorted(available)}")
    if "linear_cooldown" in names and not ((explicit or 0 < cooldown_fraction <= 1) and total_steps > 0):
        raise ConfigError(
            f"optimizer.cooldown_fraction = {cooldown_fraction}: linear_cooldown needs a fraction in (0, 1] of "
            f"train.steps ({total_steps}) to cool down over"
        )
    chosen = [available[name] for name in names]

    def schedule(count):
        s = jnp.asarray(count, jnp.float32) + 1.0
        lr = jnp.float32(1.0)
        for factor in chosen:
            lr = lr * factor(s)
        return lr

    return schedule
