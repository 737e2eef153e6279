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
    return model.apply(
        {"params": params},
        batch["inputs"],
        batch["targets"],
        **extras,
        deterministic=deterministic,
        example_ids=batch.get("example_ids"),
        rngs=None if rng is None else {"dropout": rng},
    )


def _weights(batch, pad_id):
    """1.0 on real target tokens: a packed batch marks them by segment id (padding is segment 0, whatever
    the pad id; the packer pads with zeros), an unpacked one by model.pad_id."""
    if "targets_segmentation" in batch:
        return (batch["targets_segmentation"] != 0).astype(jnp.float32)
    return (batch["targets"] != pad_id).astype(jnp.float32)


def train_step(
    state: TrainState,
    batch,
    *,
    model: Transformer,
    tx,
    label_smoothing: float,
    axis_name=None,
    accum_steps: int = 1,
    skip_nonfinite: bool = False,
):
    """One update. Returns the new state and summed metrics (global when ``axis_name`` is set).

    With ``accum_steps`` = k the (per-device) batch is split into k micro-batches whose
    gradients are summed inside a ``lax.scan``: the same update as one step on the whole
    batch, with 1/k of the activation memory.  Dropout is keyed by (step, example id),
    so the split does not change the masks either.
    """
    pad_id = model.config.pad_id
    global_tokens = jnp.maximum(_psum(_weights(batch, pad_id).sum(), axis_name), 1.0)
    dropout_rng = jax.random.fold_in(state.rng, state.step)
    if "example_ids" not in batch:
        batch = {**batch, "example_ids": jnp.arange(batch["targets"].shape[0], dtype=jnp.int32)}

    def objective(params, micro_batch):
        logits = _logits(model, params, micro_batch, deterministic=False, rng=dropout_rng)
        sums = loss_sums(logits, micro_batch["targets"], _weights(micro_batch, pad_id), label_smoothing)
        return sums["loss"] / global_tokens, sums

    gradient = jax.grad(objective, has_aux=True)
    if accum_steps == 1:
        grads, sums = gradient(state.params, batch)
    else:
        grads, sums = _accumulate(gradient, state.params, batch, accum_steps)
    grads = _psum(grads, axis_name)
    sums = _psum(sums, axis_name)
    updates, opt_state = tx.update(grads, state.opt_state, state.params)
    params = jax.tree_util.tree_map(lambda p, u: p + u, state.params, updates)
    if skip_nonfinite:  # keep the old params and moments when this update is not finite
        finite = jnp.isfinite(sums["loss"]) & jnp.all(
            jnp.asarray([jnp.all(jnp.isfinite(g)) for g in jax.tree_util.tree_leaves(grads)])
        )
        keep = lambda new, old: jax.tree_util.tree_map(lambda a, b: jnp.where(finite, a, b), new, old)  # noqa: E731
        params, opt_state = keep(params, state.params), keep(opt_state, state.opt_state)
    new_state = state.replace(step=state.step + 1, params=params, opt_state=opt_state)
    return new_state, sums


def _accumulate(gradient, params, batch, accum_steps):
    """Sum (grads, sums) of ``gradient`` over ``accum_steps`` equal micro-batches with lax.scan."""
    rows = batch["targets"].shape[0]
    if rows % accum_steps:
        raise ValueError(f"per-device batch of {rows} rows is not divisible by accum_steps={accum_steps}")
    micro_batches = jax.tree_util.tree_map(lambda x: x.reshape((accum_steps, rows // accum_steps) + x.shape[1:]), batch)
    zeros = jax.tree_util.tree_map(
        jnp.zeros_like, jax.eval_shape(gradient, params, jax.tree_util.tree_map(lambda x: x[0], micro_batches))
    )

    def body(total, micro_batch):
        return jax.tree_util.tree_map(jnp.add, total, gradient(params, micro_batch)), None

    total, _ = jax.lax.scan(body, zeros, micro_batches)
    return total


def eval_step(params, batch, *, model: Transformer, label_smoothing: float, axis_name=None):
    """Summed smoothed loss, NLL, correct and token count on one batch (no dropout)."""
    logits = _logits(model, params, batch, deterministic=True)
    sums = loss_sums(logits, batch["targets"], _weights(batch, model.config.pad_id), label_smoothing)
    return _psum(sums, axis_name)


def jit_train_step(model, tx, label_smoothing, accum_steps: int = 1):
    """Single-device jitted train step; the state argument is donated."""
    step = functools.partial(train_step, model=model, tx=tx, label_smoothing=label_smoothing, accum_steps=accum_steps)
    return jax.jit(step, donate_argnums=0)
