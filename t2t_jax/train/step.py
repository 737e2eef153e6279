"""The train and eval steps, written once with per-device semantics.

With ``axis_name`` set (pmap / shard_map launchers), loss sums, token counts
and gradients are ``psum``-ed over that axis, so the loss is normalised by the
*global* number of non-pad target tokens; with ``axis_name=None`` the same code
runs on one device.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from t2t_jax.model import Transformer
from t2t_jax.train.loss import loss_sums
from t2t_jax.train.state import TrainState

MODEL_INPUT_KEYS = ("inputs_segmentation", "targets_segmentation", "inputs_position", "targets_position")


def _psum(tree, axis_name):
    return tree if axis_name is None else jax.lax.psum(tree, axis_name)


def _logits(model, params, batch, deterministic, rng=None):
    extras = {k: batch[k] for k in MODEL_INPUT_KEYS if k in batch}
    return model.apply({"params": params}, batch["inputs"], batch["targets"], **extras,
                       deterministic=deterministic, example_ids=batch.get("example_ids"),
                       rngs=None if rng is None else {"dropout": rng})


def _weights(batch, pad_id):
    return (batch["targets"] != pad_id).astype(jnp.float32)


def train_step(state: TrainState, batch, *, model: Transformer, tx, label_smoothing: float,
               axis_name=None):
    """One update. Returns the new state and summed metrics (global when ``axis_name`` is set)."""
    weights = _weights(batch, model.config.pad_id)
    global_tokens = _psum(weights.sum(), axis_name)
    dropout_rng = jax.random.fold_in(state.rng, state.step)

    def objective(params):
        logits = _logits(model, params, batch, deterministic=False, rng=dropout_rng)
        sums = loss_sums(logits, batch["targets"], weights, label_smoothing)
        return sums["loss"] / jnp.maximum(global_tokens, 1.0), sums

    grads, sums = jax.grad(objective, has_aux=True)(state.params)
    grads = _psum(grads, axis_name)
    sums = _psum(sums, axis_name)
    updates, opt_state = tx.update(grads, state.opt_state, state.params)
    params = jax.tree_util.tree_map(lambda p, u: p + u, state.params, updates)
    new_state = state.replace(step=state.step + 1, params=params, opt_state=opt_state)
    return new_state, sums


def eval_step(params, batch, *, model: Transformer, label_smoothing: float, axis_name=None):
    """Summed smoothed loss, NLL, correct and token count on one batch (no dropout)."""
    logits = _logits(model, params, batch, deterministic=True)
    sums = loss_sums(logits, batch["targets"], _weights(batch, model.config.pad_id), label_smoothing)
    return _psum(sums, axis_name)


def jit_train_step(model, tx, label_smoothing):
    """Single-device jitted train step; the state argument is donated."""
    step = functools.partial(train_step, model=model, tx=tx, label_smoothing=label_smoothing)
    return jax.jit(step, donate_argnums=0)


def jit_eval_step(model, label_smoothing):
    return jax.jit(functools.partial(eval_step, model=model, label_smoothing=label_smoothing))
