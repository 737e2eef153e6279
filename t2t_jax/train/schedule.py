"""Learning-rate schedules as a product of named factors (T2T style).

§5.3: lr(s) = d^-0.5 · min(s^-0.5, s · w^-1.5) is
``constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size`` with constant 1, w 4000;
T2T's preset is the same string with constant 2, w 8000.  ``s`` is the optax
update count + 1 so the first update does not have learning rate 0.
"""

from __future__ import annotations

import jax.numpy as jnp

from t2t_jax.errors import ConfigError


def _factors(constant: float, warmup_steps: int, d_model: int):
    return {
        "constant": lambda s: jnp.float32(constant),
        "linear_warmup": lambda s: jnp.minimum(1.0, s / warmup_steps),
        "rsqrt_decay": lambda s: jnp.reciprocal(jnp.sqrt(jnp.maximum(s, warmup_steps))),
        "rsqrt_hidden_size": lambda s: jnp.float32(d_model) ** -0.5,
    }


def make_schedule(spec: str, *, constant: float, warmup_steps: int, d_model: int):
    """A function optax-count -> learning rate for ``spec`` (factor names joined by '*')."""
    if warmup_steps <= 0:
        raise ConfigError(f"optimizer.warmup_steps = {warmup_steps}: must be positive")
    available = _factors(constant, warmup_steps, d_model)
    names = [name.strip() for name in spec.split("*")]
    unknown = [name for name in names if name not in available]
    if unknown:
        raise ConfigError(f"optimizer.schedule: unknown factor(s) {unknown}; known: {sorted(available)}")
    chosen = [available[name] for name in names]

    def schedule(count):
        s = jnp.asarray(count, jnp.float32) + 1.0
        lr = jnp.float32(1.0)
        for factor in chosen:
            lr = lr * factor(s)
        return lr

    return schedule
