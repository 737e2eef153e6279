"""Multi-head attention: the projections, and one dispatch to the sublayer's registered variant.

Which function a sublayer runs, its extra parameters and whether the cached fast path applies all come
from its record in variants.py; the decode caches' layout is decode_cache.py's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from t2t_jax.model import decode_cache, feature_major, precision
from t2t_jax.model.attention_functions import attention_weights
from t2t_jax.model.config import ModelConfig
from t2t_jax.model.decode_cache import DecodeStep
from t2t_jax.model.layers import glorot_uniform


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..h) W^O, no biases on the projections (docs/design.md).

    Kernels are stored as (d_model, heads, head_dim) / (heads, head_dim, d_model)
    with Glorot fans computed on the 2-D view.
    """

    config: ModelConfig
    kind: str = "encoder_self"  # encoder_self | decoder_self | cross: picks the sublayer's variant

    @nn.compact
    def __call__(self, inputs_q, inputs_kv, bias, rows, decode: str | None = None, step: DecodeStep | None = None):
        """``decode``: None (training / teacher forcing), "self" (write this step's key/value into the
        fixed-size cache at ``step.index``), "cross" (encoder keys/values projected once, then reused) or
        "cross_cache" (only that projection into the cache: no query, returns None).
        When decoding, rows are [batch * step.beam] and ``inputs_kv`` of "cross" is [batch, ...]."""
        cfg = self.config
        h, dk, dv, kv = cfg.num_heads, cfg.head_dim_k, cfg.head_dim_v, cfg.key_value_heads
        to_heads = glorot_uniform(in_axis=0, out_axis=(1, 2))
        query_proj = Projection(
            "btd,dhk->bthk", (cfg.d_model, h, dk), to_heads, cfg.dtype, cfg.attention_bias, name="query"
        )
        key_proj = Projection(
            "btd,dhk->bthk", (cfg.d_model, kv, dk), to_heads, cfg.dtype, cfg.attention_bias, name="key"
        )
        value_proj = Projection(
            "btd,dhk->bthk", (cfg.d_model, kv, dv), to_heads, cfg.dtype, cfg.attention_bias, name="value"
        )
        if decode == "cross_cache":  # only project the encoder keys/values into the cache (decode_cache.start)
            decode_cache.read_cross(self, key_proj, value_proj, inputs_kv)
            return None
        if decode == "self":  # a step has few rows: one product with [W_q | W_k | W_v] instead of three
            stacked = self.get_variable(feature_major.COLLECTION, "qkv")  # None: row-major products
            query, key, value = project_together(inputs_q, (query_proj, key_proj, value_proj), cfg.dtype, stacked)
        else:
            query = query_proj(inputs_q)
        if decode is not None:
            if decode == "cross":
                key_t, value_t = decode_cache.read_cross(self, key_proj, value_proj, inputs_kv)
            else:
                key_t, value_t = decode_cache.write_self(self, key, value, step)
            out = self._attend_cached(query, self._share(key_t), self._share(value_t), bias, step, decode)
        else:
            out = self._attend(
                query, self._share(key_proj(inputs_kv), axis=2), self._share(value_proj(inputs_kv), axis=2), bias, rows
            )
        from_heads = glorot_uniform(in_axis=(0, 1), out_axis=2)
        return Projection("bthk,hkd->btd", (h, dv, cfg.d_model), from_heads, cfg.dtype, cfg.attention_bias, name="out")(
            out
        )

    def _share(self, x, axis=1):
        """Multi-/grouped-query attention: each key/value head serves num_heads / kv_heads query heads
        (caches keep only the kv heads; they are repeated at use)."""
        groups = self.config.num_heads // self.config.key_value_heads
        return x if groups == 1 else jnp.repeat(x, groups, axis=axis)

    def _attend(self, query, key, value, bias, rows, query_offset=0):
        """The variant's function on [b, q, h, d] queries and [b, k, h, d] keys/values (all heads)."""
        cfg = self.config
        variant = cfg.attention_variant(self.kind)
        init = nn.initializers.normal(stddev=query.shape[-1] ** -0.5)
        extra = {p.keyword: self.param(p.name, init, p.shape(cfg), jnp.float32) for p in variant.params}
        if variant.query_offset:
            extra["query_offset"] = query_offset
        if self.is_mutable_collection("intermediates") and variant.dot_scale is not None:  # for visualize
            weights = attention_weights(
                query,
                key,
                bias,
                scale=variant.dot_scale(query.shape[-1]),
                dropout_rate=0.0,
                dropout_rng=None,
                deterministic=True,
                dtype=cfg.dtype,
            )
            self.sow("intermediates", "attention_weights", weights)
        dropout_rng = None
        if rows is not None and cfg.attention_dropout > 0.0:
            dropout_rng = (self.make_rng("dropout"), rows)
        return variant.function(
            query,
            key,
            value,
            bias,
            dropout_rate=cfg.attention_dropout,
            dropout_rng=dropout_rng,
            deterministic=rows is None,
            dtype=cfg.dtype,
            **extra,
        )

    def _attend_cached(self, query, key_t, value_t, bias, step: DecodeStep, decode: str):
        """One decoding step on caches in decode_cache's layouts. The dot-product family: the ``beam``
        queries of a sentence share one cache, a [beam, d] x [d, n] product per sentence and head, masked by
        ``bias`` (self: [b, 1, beam, length * beam] from the ancestry; cross: [b, 1, 1, source_len]).
        Other variants: each hypothesis's own keys/values, through the variant's function."""
        cfg = self.config
        variant = cfg.attention_variant(self.kind)
        rows, _, heads, _ = query.shape
        batch, beam = rows // step.beam, step.beam
        if variant.dot_scale is not None:
            scale = jnp.asarray(variant.dot_scale(query.shape[-1]), query.dtype)
            grouped = (query * scale).reshape(batch, beam, heads, -1).transpose(0, 2, 1, 3)  # [b, h, beam, d]
            # keys may be cached in f32 holding compute-dtype values (decode_cache.key_dtype): the product then
            # runs in f32 on the same numbers, as XLA:CPU runs a mixed dot with f32 accumulation
            logits = precision.einsum("bhqd,bhdk->bhqk", grouped, key_t, key_t.dtype, jnp.float32)
            weights = jax.nn.softmax(logits + bias, axis=-1)
            out = precision.einsum("bhqk,bhkd->bhqd", weights, value_t, cfg.dtype)
            return out.transpose(0, 2, 1, 3).reshape(rows, 1, heads, -1)
        if decode == "cross":
            key, value, bias = decode_cache.per_hypothesis_cross(key_t, value_t, bias, beam)
        else:
            key, value, bias = decode_cache.per_hypothesis_self(key_t, value_t, step, cfg.local_window)
        return self._attend(query, key, value, bias, None, query_offset=step.index)


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
        if self.has_variable(feature_major.COLLECTION, "kernel"):  # a decoding step at few rows
            kernel_t = self.get_variable(feature_major.COLLECTION, "kernel")  # [out (heads * dim or d), in]
            flat = x.reshape(*x.shape[:2], -1)  # "bthk": [b, t, heads * dim]; "btd" as is
            y = feature_major.dot(flat, kernel_t, self.dtype).reshape(x.shape[:2] + self.out_dims)
        else:
            y = precision.einsum(self.equation, x, kernel, self.dtype)
        return y if bias is None else y + bias.astype(y.dtype)

    @nn.compact
    def weights(self):
        """(kernel, bias or None) as stored."""
        kernel = self.param("kernel", self.initializer, self.shape, jnp.float32)
        if not self.use_bias:
            return kernel, None
        return kernel, self.param("bias", nn.initializers.zeros, self.out_dims, jnp.float32)

    @property
    def out_dims(self) -> tuple:
        """The kernel's output dims: (heads, dim) into heads, (d,) out of them."""
        return self.shape[1:] if self.equation.endswith("bthk") else self.shape[-1:]


def project_together(x, projections, dtype, stacked_t=None):
    """The "btd,dhk->bthk" projections of one input as a single matmul with their kernels side by side,
    split back into [b, t, heads, dim] per projection (same products as applying each). ``stacked_t``: those
    kernels already stacked as [sum of heads * dim, d] (feature_major.decoder_weights), for a feature-major product."""
    weights = [projection.weights() for projection in projections]
    kernels = [kernel.reshape(kernel.shape[0], -1) for kernel, _ in weights]
    if stacked_t is not None:
        y = feature_major.dot(x, stacked_t, dtype)
    else:
        y = precision.einsum("btd,df->btf", x, jnp.concatenate(kernels, axis=1), dtype)
    if weights[0][1] is not None:
        y = y + jnp.concatenate([bias.reshape(-1) for _, bias in weights]).astype(y.dtype)
    ends = list(itertools.accumulate(k.shape[1] for k in kernels))
    return [
        part.reshape(part.shape[:2] + kernel.shape[1:])
        for part, (kernel, _) in zip(jnp.split(y, ends[:-1], axis=-1), weights)
    ]
