"""Dropout keyed per example, so masks do not depend on how a batch is split over devices.

The mask of row r is drawn from fold_in(module_key, example_id[r]); a global
batch run on one device or split over eight therefore drops the same units,
which is what lets the parallel launchers be tested for equality with dropout on.
``rows`` is None at evaluation (deterministic).
"""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp


class Dropout(nn.Module):
    rate: float

    @nn.compact
    def __call__(self, x, rows):
        if rows is None or self.rate == 0.0:
            return x
        keep = row_keep_mask(self.make_rng("dropout"), rows, x.shape, self.rate)
        return jnp.where(keep, x / jnp.asarray(1.0 - self.rate, x.dtype), jnp.zeros((), x.dtype))


def row_keep_mask(key, rows, shape, rate):
    """Boolean keep-mask of ``shape`` whose row r depends only on (key, rows[r])."""
    row_keys = jax.vmap(lambda r: jax.random.fold_in(key, r))(rows)
    return jax.vmap(lambda k: jax.random.bernoulli(k, 1.0 - rate, shape[1:]))(row_keys)


def dropout_rows(batch_size: int, deterministic: bool, example_ids=None):
    """The per-row ids that switch dropout on (None = off)."""
    if deterministic:
        return None
    if example_ids is None:
        return jnp.arange(batch_size, dtype=jnp.int32)
    return example_ids
