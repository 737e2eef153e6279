"""A Transformer written with Flax's own layers, laid out as the Flax WMT example lays out its model: the train step
a Flax user would write first, timed beside ours (bench/train_step.py --flax).

Pre-LN blocks around ``nn.MultiHeadDotProductAttention`` (no projection biases), a ReLU MLP of two biased
``nn.Dense``, one shared ``nn.Embed`` whose ``attend`` gives the logits, fixed sinusoidal positions, padding and
causal masks from ``nn.make_attention_mask`` / ``nn.make_causal_mask``; Adam (0.9, 0.98, 1e-9) on the rsqrt
schedule and label-smoothed cross-entropy over the non-pad targets, one ``jax.jit`` around loss, gradient and
update. Same sizes and batch as ours; written for this benchmark, not imported from the example.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn

from bench.memory import minor_page_faults


def sinusoids(length: int, width: int) -> np.ndarray:
    """[length, width] sin on the first half of the features, cos on the second (the example's table)."""
    position = np.arange(length)[:, None]
    rates = np.exp(-np.log(10000.0) * np.arange(width // 2) / (width // 2 - 1))
    return np.concatenate([np.sin(position * rates), np.cos(position * rates)], axis=1).astype(np.float32)


class Mlp(nn.Module):
    d_ff: int
    dropout: float
    dtype: str

    @nn.compact
    def __call__(self, x, train: bool):
        h = nn.relu(nn.Dense(self.d_ff, dtype=self.dtype)(x))
        h = nn.Dropout(self.dropout)(h, deterministic=not train)
        return nn.Dropout(self.dropout)(nn.Dense(x.shape[-1], dtype=self.dtype)(h), deterministic=not train)


class Block(nn.Module):
    """One encoder block, or a decoder block when ``memory`` is given: pre-LN attention(s), then the MLP."""

    heads: int
    d_ff: int
    dropout: float
    dtype: str

    def _attend(self, x, keys, mask, train):
        attend = nn.MultiHeadDotProductAttention(num_heads=self.heads, dtype=self.dtype, use_bias=False)
        out = attend(x, keys, mask=mask, deterministic=True)  # attention dropout 0, as ours
        return nn.Dropout(self.dropout)(out, deterministic=not train)

    @nn.compact
    def __call__(self, x, self_mask, train: bool, memory=None, cross_mask=None):
        y = nn.LayerNorm(dtype=self.dtype)(x)
        x = x + self._attend(y, y, self_mask, train)
        if memory is not None:
            x = x + self._attend(nn.LayerNorm(dtype=self.dtype)(x), memory, cross_mask, train)
        return x + Mlp(self.d_ff, self.dropout, self.dtype)(nn.LayerNorm(dtype=self.dtype)(x), train)


class FlaxTransformer(nn.Module):
    vocab_size: int
    d_model: int
    heads: int
    d_ff: int
    layers: int
    dropout: float = 0.1
    dtype: str = "float32"

    @nn.compact
    def __call__(self, inputs, targets, train: bool = True):
        embed = nn.Embed(self.vocab_size, self.d_model, embedding_init=nn.initializers.normal(1.0))
        table = jnp.asarray(sinusoids(max(inputs.shape[1], targets.shape[1]), self.d_model))
        block = lambda: Block(self.heads, self.d_ff, self.dropout, self.dtype)  # noqa: E731

        def embedded(ids):  # [b, t] -> [b, t, d]
            x = embed(ids) + table[: ids.shape[1]]
            return nn.Dropout(self.dropout)(x, deterministic=not train).astype(self.dtype)

        source_mask = nn.make_attention_mask(inputs > 0, inputs > 0)
        x = embedded(inputs)
        for _ in range(self.layers):
            x = block()(x, source_mask, train)
        memory = nn.LayerNorm(dtype=self.dtype)(x)
        shifted = jnp.pad(targets, ((0, 0), (1, 0)))[:, :-1]
        target_mask = nn.combine_masks(nn.make_attention_mask(shifted > 0, shifted > 0), nn.make_causal_mask(shifted))
        cross_mask = nn.make_attention_mask(shifted > 0, inputs > 0)
        y = embedded(shifted)
        for _ in range(self.layers):
            y = block()(y, target_mask, train, memory, cross_mask)
        y = nn.LayerNorm(dtype=self.dtype)(y)
        return embed.attend(y.astype(jnp.float32)) / jnp.sqrt(self.d_model)  # [b, t, vocab]


def benchmark(size: dict, batch: int, length: int, steps: int, warmup: int, dtype: str = "float32") -> dict:
    """Seconds per train step of FlaxTransformer at ``size`` (bench/train_step.py's SIZES), on one fixed batch."""
    dims = (size["vocab_size"], size["d_model"], size["num_heads"], size["d_ff"], size["layers"])
    model = FlaxTransformer(*dims, dtype=dtype)
    rng = np.random.default_rng(0)
    inputs = jnp.asarray(rng.integers(3, size["vocab_size"], (batch, length)), jnp.int32)
    targets = jnp.asarray(rng.integers(3, size["vocab_size"], (batch, length)), jnp.int32)
    params = model.init({"params": jax.random.key(0), "dropout": jax.random.key(1)}, inputs, targets)["params"]
    d, warm = size["d_model"], 4000
    schedule = lambda s: d**-0.5 * jnp.minimum((s + 1) ** -0.5, (s + 1) * warm**-1.5)  # noqa: E731
    tx = optax.adam(schedule, b1=0.9, b2=0.98, eps=1e-9)
    opt_state = tx.init(params)

    @jax.jit
    def step(params, opt_state, key):
        def loss_fn(params):
            logits = model.apply({"params": params}, inputs, targets, rngs={"dropout": key})
            soft = optax.smooth_labels(jax.nn.one_hot(targets, size["vocab_size"]), 0.1)
            weights = (targets > 0).astype(jnp.float32)
            return (optax.softmax_cross_entropy(logits, soft) * weights).sum() / weights.sum()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    keys = jax.random.split(jax.random.key(2), warmup + steps)
    began = time.perf_counter()
    for key in keys[:warmup]:
        params, opt_state, loss = step(params, opt_state, key)
    jax.block_until_ready(loss)
    warmup_seconds = time.perf_counter() - began
    began, faults = time.perf_counter(), minor_page_faults()
    for key in keys[warmup:]:
        params, opt_state, loss = step(params, opt_state, key)
    jax.block_until_ready(loss)
    seconds = (time.perf_counter() - began) / steps
    return {
        "seconds_per_step": seconds,
        "page_faults_per_step": (minor_page_faults() - faults) // steps,
        "target_tokens_per_s": batch * length / seconds,
        "warmup_seconds": warmup_seconds,
        "params": sum(leaf.size for leaf in jax.tree_util.tree_leaves(params)),
        "loss": float(loss),
    }
