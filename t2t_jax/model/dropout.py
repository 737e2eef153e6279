"""Dropout keyed per example, so masks do not depend on how a batch is split over devices.

The mask of row r is drawn from fold_in(module_key, example_id[r]); a global
batch run on one device or split over eight therefore drops the same units,
which is what lets the parallel launchers be tested for equality with dropout on.
``rows`` is None at evaluation (deterministic). No Flax here: attention functions use it too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def row_keep_mask(key, rows, shape, rate):
    """Boolean keep-mask of ``shape`` whose row r depends only on (key, rows[r])."""
    row_keys = jax.vmap(lambda r: jax.random.fold_in(key, r))(rows)
    return jax.vmap(lambda k: jax.random.bernoulli(k, 1.0 - rate, shape[1:]))(row_keys)


def apply_keep_mask(x, keep, rate):
    """Kept units scaled by 1 / (1 - rate), the others 0, in x's dtype. The division is done in float32:
    in bfloat16, 1 - 0.1 rounds to 0.8984375 and every kept unit would come out 0.17% too large."""
    scaled = x.astype(jnp.float32) / jnp.float32(1.0 - rate)
    return jnp.where(keep, scaled.astype(x.dtype), jnp.zeros((), x.dtype))


def dropout_rows(batch_size: int, deterministic: bool, example_ids=None):
    """The per-row ids that switch dropout on (None = off)."""
    if deterministic:
        return None
    if example_ids is None:
        return jnp.arange(batch_size, dtype=jnp.int32)
    return example_ids
