"""Train state (a pytree) and the optimizer of §5.3."""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import optax

from t2t_jax.model import ModelConfig, Transformer
from t2t_jax.train.cooldown import CooldownPlan
from t2t_jax.train.schedule import make_schedule


@flax.struct.dataclass
class TrainState:
    step: jnp.ndarray  # number of updates applied
    params: Any
    opt_state: Any
    rng: jnp.ndarray  # base key; dropout of step s uses fold_in(rng, s)


def make_optimizer(opt_config, model_config: ModelConfig, total_steps: int = 0, cooldown: CooldownPlan | None = None):
    """Adam(β1, β2, ε) scaled by the named-factor schedule; optional clipping / weight decay.
    ``total_steps`` (train.steps) is where a ``linear_cooldown`` schedule reaches 0, unless a ``cooldown``
    started by the time budget (train/cooldown.py) says where and how long."""
    if cooldown is not None:
        total_steps = cooldown.end
    schedule = make_schedule(
        opt_config.schedule,
        constant=opt_config.constant,
        warmup_steps=opt_config.warmup_steps,
        d_model=model_config.d_model,
        cooldown_fraction=opt_config.cooldown_fraction,
        total_steps=total_steps,
        cooldown_steps=cooldown.steps if cooldown is not None else None,
    )
    parts = []
    if opt_config.clip_norm > 0:
        parts.append(optax.clip_by_global_norm(opt_config.clip_norm))
    parts.append(optax.scale_by_adam(b1=opt_config.b1, b2=opt_config.b2, eps=opt_config.eps))
    if opt_config.weight_decay > 0:
        parts.append(optax.add_decayed_weights(opt_config.weight_decay))
    parts.append(optax.scale_by_learning_rate(schedule))
    return optax.chain(*parts), schedule


def init_params(model_config: ModelConfig, seed: int, length: int = 8):
    """Float32 params from a seed (shapes do not depend on ``length``)."""
    dummy = jnp.ones((1, length), jnp.int32)
    model = Transformer(model_config)
    return jax.jit(model.init)(jax.random.PRNGKey(seed), dummy, dummy)["params"]


def create_state(model_config: ModelConfig, tx, seed: int) -> TrainState:
    params = init_params(model_config, seed)
    return TrainState(
        step=jnp.zeros((), jnp.int32),
        params=params,
        opt_state=tx.init(params),
        rng=jax.random.fold_in(jax.random.PRNGKey(seed), 1),
    )


def param_count(params) -> int:
    return sum(int(x.size) for x in jax.tree_util.tree_leaves(params))
