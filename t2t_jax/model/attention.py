"""Multi-head attention and the registry of attention functions.

Every registered function has one signature so a config line swaps it:
``fn(query, key, value, bias, *, dropout_rate, dropout_rng, deterministic, dtype)``
with query [b, q, h, d_k], key [b, k, h, d_k], value [b, k, h, d_v] and an
additive float32 bias broadcastable to [b, h, q, k]; it returns [b, q, h, d_v].
``dropout_rng`` is (key, example ids) so weight dropout is keyed per example (dropout.py).
"""
from __future__ import annotations

import itertools
from typing import Callable, Optional

import flax.linen as nn
import jax
import jax.numpy as jnp

from t2t_jax.model import masks, precision
from t2t_jax.model.config import ModelConfig
from t2t_jax.model.dropout import row_keep_mask
from t2t_jax.model.layers import glorot_uniform
from t2t_jax.model.masks import DecodeStep


def attention_weights(query, key, bias, *, scale, dropout_rate, dropout_rng, deterministic, dtype):
    """softmax(q·kᵀ·scale + bias) in float32, with optional dropout on the weights."""
    logits = precision.einsum("bqhd,bkhd->bhqk", query * jnp.asarray(scale, query.dtype), key,
                              dtype, jnp.float32)
    return softmax_weights(logits, bias, dropout_rate, dropout_rng, deterministic)


def softmax_weights(logits, bias, dropout_rate, dropout_rng, deterministic):
    """softmax(logits + bias) in float32, then weight dropout keyed per example (dropout.py)."""
    if bias is not None:
        logits = logits + bias
    weights = jax.nn.softmax(logits, axis=-1)
    if not deterministic and dropout_rate > 0.0:
        key, rows = dropout_rng
        keep = row_keep_mask(key, rows, weights.shape, dropout_rate)
        weights = jnp.where(keep, weights / (1.0 - dropout_rate), 0.0)
    return weights


def dot_product(query, key, value, bias, *, dropout_rate=0.0, dropout_rng=None, deterministic=True,
                dtype="float32"):
    """Scaled dot-product attention, eq. (1): softmax(QKᵀ/√d_k)V."""
    weights = attention_weights(query, key, bias, scale=query.shape[-1] ** -0.5, dropout_rate=dropout_rate,
                                dropout_rng=dropout_rng, deterministic=deterministic, dtype=dtype)
    return precision.einsum("bhqk,bkhd->bqhd", weights, value, dtype)


def dot_product_unscaled(query, key, value, bias, *, dropout_rate=0.0, dropout_rng=None,
                         deterministic=True, dtype="float32"):
    """Dot-product attention without 1/√d_k: shows why the paper scales (§3.2.1)."""
    weights = attention_weights(query, key, bias, scale=1.0, dropout_rate=dropout_rate,
                                dropout_rng=dropout_rng, deterministic=deterministic, dtype=dtype)
    return precision.einsum("bhqk,bkhd->bqhd", weights, value, dtype)


def fused(query, key, value, bias, *, dropout_rate=0.0, dropout_rng=None, deterministic=True, dtype="float32"):
    """``jax.nn.dot_product_attention`` (XLA here; cuDNN flash attention on GPUs that have it).

    No attention-weight dropout: the fused kernels do not expose the weights."""
    if not deterministic and dropout_rate > 0.0:
        raise ValueError("attention='fused' has no attention-weight dropout; set model.attention_dropout=0")
    batch, q_len, heads, _ = query.shape
    if bias is not None:
        bias = jnp.broadcast_to(bias, (batch, heads, q_len, key.shape[1]))
    dtype = jnp.dtype(dtype)
    out = jax.nn.dot_product_attention(query.astype(dtype), key.astype(dtype), value.astype(dtype),
                                       bias=None if bias is None else bias.astype(dtype))
    return out.astype(dtype)


def additive(query, key, value, bias, *, v, dropout_rate=0.0, dropout_rng=None, deterministic=True,
             dtype="float32"):
    """Additive (Bahdanau) attention per head, the alternative §3.2.1 compares against:
    e_ij = vᵀ tanh(q_i + k_j) with q, k the projected queries/keys and v a learned [heads, d_k]."""
    hidden = jnp.tanh(query.astype(jnp.float32)[:, :, None] + key.astype(jnp.float32)[:, None])  # [b, q, k, h, d]
    logits = jnp.einsum("bqkhd,hd->bhqk", hidden, v)
    weights = softmax_weights(logits, bias, dropout_rate, dropout_rng, deterministic)
    return precision.einsum("bhqk,bkhd->bqhd", weights, value, dtype)


ATTENTION_FUNCTIONS = {
    "dot_product": dot_product,
    "dot_product_unscaled": dot_product_unscaled,
    "fused": fused,
    "additive": additive,
}
DOT_PRODUCT_FAMILY = ("dot_product", "dot_product_unscaled", "fused")


def relative(query, key, value, bias, *, rel_key, rel_value, query_offset=0, dropout_rate=0.0, dropout_rng=None,
             deterministic=True, dtype="float32"):
    """Relative position representations (Shaw et al. 2018; T2T ``dot_product_relative``): learned
    [2k+1, d] key and value embeddings of the clipped distance j - i, shared across heads."""
    clip = (rel_key.shape[0] - 1) // 2
    q_pos = query_offset + jnp.arange(query.shape[1])
    distance = jnp.clip(jnp.arange(key.shape[1])[None, :] - q_pos[:, None], -clip, clip) + clip  # [q, k]
    scale = query.shape[-1] ** -0.5
    q32 = query.astype(jnp.float32) * scale
    logits = jnp.einsum("bqhd,bkhd->bhqk", q32, key.astype(jnp.float32))
    logits = logits + jnp.einsum("bqhd,qkd->bhqk", q32, rel_key[distance])
    weights = softmax_weights(logits, bias, dropout_rate, dropout_rng, deterministic)
    out = jnp.einsum("bhqk,bkhd->bqhd", weights, value.astype(jnp.float32))
    return (out + jnp.einsum("bhqk,qkd->bqhd", weights, rel_value[distance])).astype(dtype)


ATTENTION_FUNCTIONS["relative"] = relative


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..h) W^O, no biases on the projections (DESIGN.md).

    Kernels are stored as (d_model, heads, head_dim) / (heads, head_dim, d_model)
    with Glorot fans computed on the 2-D view.
    """

    config: ModelConfig
    kind: str = "encoder_self"  # encoder_self | decoder_self | cross: picks the registry function

    @nn.compact
    def __call__(self, inputs_q, inputs_kv, bias, rows, decode: Optional[str] = None,
                 step: Optional[DecodeStep] = None):
        """``decode``: None (training / teacher forcing), "self" (write this step's key/value into the
        fixed-size cache at ``step.index``) or "cross" (encoder keys/values projected once, then reused).
        When decoding, rows are [batch * step.beam] and ``inputs_kv`` of "cross" is [batch, ...]."""
        cfg = self.config
        h, dk, dv, kv = cfg.num_heads, cfg.head_dim_k, cfg.head_dim_v, cfg.key_value_heads
        to_heads = glorot_uniform(in_axis=0, out_axis=(1, 2))
        query_proj = Projection("btd,dhk->bthk", (cfg.d_model, h, dk), to_heads, cfg.dtype, cfg.attention_bias,
                                name="query")
        key_proj = Projection("btd,dhk->bthk", (cfg.d_model, kv, dk), to_heads, cfg.dtype, cfg.attention_bias,
                              name="key")
        value_proj = Projection("btd,dhk->bthk", (cfg.d_model, kv, dv), to_heads, cfg.dtype, cfg.attention_bias,
                                name="value")
        if decode == "self":  # a step has few rows: one product with [W_q | W_k | W_v] instead of three
            query, key, value = project_together(inputs_q, (query_proj, key_proj, value_proj), cfg.dtype)
        else:
            query = query_proj(inputs_q)
        if decode is not None:
            if decode == "cross":
                key_t, value_t = self._cross_cache(key_proj, value_proj, inputs_kv)
            else:
                key_t, value_t = self._self_cache(key, value, step)
            out = self._attend_cached(query, self._share(key_t), self._share(value_t), bias, step, decode)
        else:
            out = self._attend(query, self._share(key_proj(inputs_kv), axis=2), self._share(value_proj(inputs_kv), axis=2),
                               bias, rows)
        from_heads = glorot_uniform(in_axis=(0, 1), out_axis=2)
        return Projection("bthk,hkd->btd", (h, dv, cfg.d_model), from_heads, cfg.dtype, cfg.attention_bias,
                          name="out")(out)

    def _share(self, x, axis=1):
        """Multi-/grouped-query attention: each key/value head serves num_heads / kv_heads query heads
        (caches keep only the kv heads; they are repeated at use)."""
        groups = self.config.num_heads // self.config.key_value_heads
        return x if groups == 1 else jnp.repeat(x, groups, axis=axis)

    def _attend(self, query, key, value, bias, rows, query_offset=0):
        cfg = self.config
        extra, name = {}, cfg.attention_function(self.kind)
        if name == "relative":
            length = 2 * cfg.relative_clip + 1
            init = nn.initializers.normal(stddev=query.shape[-1] ** -0.5)
            extra = {"rel_key": self.param("relative_key", init, (length, query.shape[-1]), jnp.float32),
                     "rel_value": self.param("relative_value", init, (length, value.shape[-1]), jnp.float32),
                     "query_offset": query_offset}
        if name == "additive":
            extra["v"] = self.param("additive_v", nn.initializers.normal(stddev=query.shape[-1] ** -0.5),
                                    (cfg.num_heads, query.shape[-1]), jnp.float32)
        if self.is_mutable_collection("intermediates") and name in DOT_PRODUCT_FAMILY:  # for visualize
            weights = attention_weights(query, key, bias, scale=query.shape[-1] ** -0.5, dropout_rate=0.0,
                                        dropout_rng=None, deterministic=True, dtype=cfg.dtype)
            self.sow("intermediates", "attention_weights", weights)
        dropout_rng = None
        if rows is not None and cfg.attention_dropout > 0.0:
            dropout_rng = (self.make_rng("dropout"), rows)
        attend = ATTENTION_FUNCTIONS[name]
        return attend(query, key, value, bias, dropout_rate=cfg.attention_dropout, dropout_rng=dropout_rng,
                      deterministic=rows is None, dtype=cfg.dtype, **extra)

    def _attend_cached(self, query, key_t, value_t, bias, step: DecodeStep, decode: str):
        """One decoding step on caches in dot-ready layouts (keys [b, h, d, n], values [b, h, n, d]; with
        [b, n, h, d] caches XLA:CPU transposed every whole cache at every step). The ``beam`` queries of a
        sentence share one cache: a [beam, d] x [d, n] product per sentence and head, masked by ``bias``
        (self: [b, 1, beam, length * beam] from the ancestry; cross: [b, 1, 1, source_len])."""
        cfg = self.config
        name = cfg.attention_function(self.kind)
        rows, _, heads, _ = query.shape
        batch, beam = rows // step.beam, step.beam
        if name in DOT_PRODUCT_FAMILY:
            scale = query.shape[-1] ** -0.5 if name != "dot_product_unscaled" else 1.0
            grouped = (query * jnp.asarray(scale, query.dtype)).reshape(batch, beam, heads, -1).transpose(0, 2, 1, 3)
            logits = precision.einsum("bhqd,bhdk->bhqk", grouped, key_t, cfg.dtype, jnp.float32)
            weights = jax.nn.softmax(logits + bias, axis=-1)
            out = precision.einsum("bhqk,bhkd->bhqd", weights, value_t, cfg.dtype)
            return out.transpose(0, 2, 1, 3).reshape(rows, 1, heads, -1)
        key, value = key_t.transpose(0, 3, 1, 2), value_t.transpose(0, 2, 1, 3)  # registry layout [b, n, h, d]
        if decode == "cross":  # every hypothesis reads its sentence's encoder keys/values
            key, value, bias = (jnp.repeat(x, beam, axis=0) for x in (key, value, bias))
        else:
            key, value, bias = self._per_hypothesis(key, value, step)
        return self._attend(query, key, value, bias, None, query_offset=step.index)

    def _per_hypothesis(self, key, value, step: DecodeStep):
        """Each row's own history [rows, length, h, d] gathered from a grouped cache through the ancestry
        (attention functions other than dot-product read keys per row), with its causal bias."""
        batch, beam, length = key.shape[0], step.beam, step.length
        bias = masks.cached_self_bias(DecodeStep(step.index, length), self.config.local_window)
        if beam == 1:
            return key, value, bias
        slot = (jnp.arange(length)[None, None, :] * beam + step.ancestry).reshape(batch * beam, length)

        def gather(x):  # [b, length * beam, h, d] -> [b * beam, length, h, d]
            x = jnp.repeat(x, beam, axis=0)
            return jnp.take_along_axis(x, slot[:, :, None, None], axis=1)

        return gather(key), gather(value), bias

    def _self_cache(self, key, value, step: DecodeStep):
        """Write this step's keys/values of all hypotheses at position ``step.index`` of the grouped
        fixed-size caches (keys [b, h, d, length * beam], values [b, h, length * beam, d]), in place."""
        rows, _, heads, dk = key.shape
        batch, beam, size = rows // step.beam, step.beam, step.length * step.beam
        cached_key = self.variable("cache", "cached_key", jnp.zeros, (batch, heads, dk, size), key.dtype)
        cached_value = self.variable("cache", "cached_value", jnp.zeros, (batch, heads, size, value.shape[-1]),
                                     value.dtype)
        key = key.reshape(batch, beam, heads, dk).transpose(0, 2, 3, 1)
        value = value.reshape(batch, beam, heads, -1).transpose(0, 2, 1, 3)
        for cached, update, name in ((cached_key, key, "cached_key"), (cached_value, value, "cached_value")):
            start = [0] * update.ndim
            start[SLOT_AXIS[name]] = step.index * beam
            cached.value = jax.lax.dynamic_update_slice(cached.value, update, start)
        return cached_key.value, cached_value.value

    def _cross_cache(self, key_proj, value_proj, encoded):
        """Encoder keys/values, projected on the first decode step only, kept in the dot-ready layouts."""
        if self.has_variable("cache", "cross_key"):
            return self.get_variable("cache", "cross_key"), self.get_variable("cache", "cross_value")
        key_t, value_t = key_proj(encoded).transpose(0, 2, 3, 1), value_proj(encoded).transpose(0, 2, 1, 3)
        self.put_variable("cache", "cross_key", key_t)
        self.put_variable("cache", "cross_value", value_t)
        return key_t, value_t


SLOT_AXIS = {"cached_key": 3, "cached_value": 2}  # the position-major slot axis of _self_cache's buffers


def self_cache_positions(cache, beam: int) -> int:
    """Positions the decode caches (a "cache" collection) hold per hypothesis (all layers alike)."""
    for path, leaf in jax.tree_util.tree_leaves_with_path(cache):
        name = getattr(path[-1], "key", None)
        if name in SLOT_AXIS:
            return leaf.shape[SLOT_AXIS[name]] // beam
    raise ValueError("decode cache has no self-attention buffers")


def grow_self_caches(cache, positions: int, beam: int):
    """The self-attention buffers of a "cache" collection zero-padded to ``positions`` per hypothesis
    (slots are position-major, so the written ones keep their places); cross-attention entries as they are."""
    def pad(path, leaf):
        axis = SLOT_AXIS.get(getattr(path[-1], "key", None))
        if axis is None:
            return leaf
        widths = [(0, 0)] * leaf.ndim
        widths[axis] = (0, positions * beam - leaf.shape[axis])
        return jnp.pad(leaf, widths)

    return jax.tree_util.tree_map_with_path(pad, cache)


class Projection(nn.Module):
    """A kernel applied by one einsum (params at ``<name>/kernel``; ``<name>/bias`` only if ``use_bias``)."""

    equation: str
    shape: tuple
    initializer: Callable
    dtype: str
    use_bias: bool = False

    @nn.compact
    def __call__(self, x):
        kernel, bias = self.weights()
        y = precision.einsum(self.equation, x, kernel, self.dtype)
        return y if bias is None else y + bias.astype(y.dtype)

    @nn.compact
    def weights(self):
        """(kernel, bias or None) as stored."""
        kernel = self.param("kernel", self.initializer, self.shape, jnp.float32)
        if not self.use_bias:
            return kernel, None
        out_dims = self.shape[1:] if self.equation.endswith("bthk") else self.shape[-1:]
        return kernel, self.param("bias", nn.initializers.zeros, out_dims, jnp.float32)


def project_together(x, projections, dtype):
    """The "btd,dhk->bthk" projections of one input as a single matmul with their kernels side by side,
    split back into [b, t, heads, dim] per projection (same products as applying each)."""
    weights = [projection.weights() for projection in projections]
    kernels = [kernel.reshape(kernel.shape[0], -1) for kernel, _ in weights]
    y = precision.einsum("btd,df->btf", x, jnp.concatenate(kernels, axis=1), dtype)
    if weights[0][1] is not None:
        y = y + jnp.concatenate([bias.reshape(-1) for _, bias in weights]).astype(y.dtype)
    ends = list(itertools.accumulate(k.shape[1] for k in kernels))
    return [part.reshape(part.shape[:2] + kernel.shape[1:])
            for part, (kernel, _) in zip(jnp.split(y, ends[:-1], axis=-1), weights)]
