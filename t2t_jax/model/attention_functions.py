"""The attention functions the variant registry (variants.py) names; pure jax, no parameters of their own.

Every function has one signature, so a config line swaps it:
``fn(query, key, value, bias, *, dropout_rate, dropout_rng, deterministic, dtype, **extra)``
with query [b, q, h, d_k], key [b, k, h, d_k], value [b, k, h, d_v] and an additive float32 bias
broadcastable to [b, h, q, k]; it returns [b, q, h, d_v]. ``extra`` are the variant's learned parameters
(by the keyword its record gives) and, for position-aware variants, ``query_offset``. ``dropout_rng`` is
(key, example ids) so weight dropout is keyed per example (dropout.py).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from t2t_jax.model import precision
from t2t_jax.model.dropout import apply_keep_mask, row_keep_mask


def attention_weights(query, key, bias, *, scale, dropout_rate, dropout_rng, deterministic, dtype):
    """softmax(q·kᵀ·scale + bias) [b, h, q, k] in float32, with optional dropout on the weights."""
    logits = precision.einsum("bqhd,bkhd->bhqk", query * jnp.asarray(scale, query.dtype), key, dtype, jnp.float32)
    return softmax_weights(logits, bias, dropout_rate, dropout_rng, deterministic)


def softmax_weights(logits, bias, dropout_rate, dropout_rng, deterministic):
    """softmax(logits + bias) in float32, then weight dropout keyed per example (dropout.py)."""
    if bias is not None:
        logits = logits + bias
    weights = jax.nn.softmax(logits, axis=-1)
    if not deterministic and dropout_rate > 0.0:
        key, rows = dropout_rng
        weights = apply_keep_mask(weights, row_keep_mask(key, rows, weights.shape, dropout_rate), dropout_rate)
    return weights


def dot_product(query, key, value, bias, *, dropout_rate=0.0, dropout_rng=None, deterministic=True, dtype="float32"):
    """Scaled dot-product attention, eq. (1): softmax(QKᵀ/√d_k)V."""
    weights = attention_weights(
        query,
        key,
        bias,
        scale=query.shape[-1] ** -0.5,
        dropout_rate=dropout_rate,
        dropout_rng=dropout_rng,
        deterministic=deterministic,
        dtype=dtype,
    )
    return precision.einsum("bhqk,bkhd->bqhd", weights, value, dtype)


def dot_product_unscaled(
    query, key, value, bias, *, dropout_rate=0.0, dropout_rng=None, deterministic=True, dtype="float32"
):
    """Dot-product attention without 1/√d_k: shows why the paper scales (§3.2.1)."""
    weights = attention_weights(
        query,
        key,
        bias,
        scale=1.0,
        dropout_rate=dropout_rate,
        dropout_rng=dropout_rng,
        deterministic=deterministic,
        dtype=dtype,
    )
    return precision.einsum("bhqk,bkhd->bqhd", weights, value, dtype)


def fused(query, key, value, bias, *, dropout_rate=0.0, dropout_rng=None, deterministic=True, dtype="float32"):
    """``jax.nn.dot_product_attention``: cuDNN's fused kernel on a GPU in bf16/f16, XLA's elsewhere.

    jax picks XLA unless asked for cuDNN, so the GPU path asks, and falls back to XLA (at trace time) when
    cuDNN refuses the shapes or is missing. The bias is broadcast over queries only, never over heads: a
    [b, h, q, k] bias is the tensor a fused kernel exists not to build. No attention-weight dropout: the
    fused kernels do not expose the weights."""
    if not deterministic and dropout_rate > 0.0:
        raise ValueError("attention='fused' has no attention-weight dropout; set model.attention_dropout=0")
    dtype = jnp.dtype(dtype)
    query, key, value = query.astype(dtype), key.astype(dtype), value.astype(dtype)
    if bias is not None:  # [b or 1, 1, q or 1, k] -> [b or 1, 1, q, k]: the q and k extents cuDNN requires
        bias = jnp.broadcast_to(bias, bias.shape[:2] + (query.shape[1], key.shape[1])).astype(dtype)
    if fused_implementation(dtype) == "cudnn":
        try:
            return jax.nn.dot_product_attention(query, key, value, bias=bias, implementation="cudnn").astype(dtype)
        except (ValueError, NotImplementedError, RuntimeError):  # shapes, head size or cuDNN version refused
            pass
    return jax.nn.dot_product_attention(query, key, value, bias=bias, implementation="xla").astype(dtype)


def fused_implementation(dtype) -> str:
    """ "cudnn" where jax can run cuDNN's fused attention (a GPU, half-precision inputs), else "xla"."""
    half = jnp.dtype(dtype) in (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16))
    return "cudnn" if half and jax.default_backend() == "gpu" else "xla"


ADDITIVE_KEY_CHUNK = 16  # keys per piece of the additive score: the [b, q, chunk, h, d_k] tanh, never [b, q, k, h, d_k]


def additive(query, key, value, bias, *, v, dropout_rate=0.0, dropout_rng=None, deterministic=True, dtype="float32"):
    """Additive (Bahdanau) attention per head, the alternative §3.2.1 compares against:
    e_ij = vᵀ tanh(q_i + k_j) with q, k the projected queries/keys and v a learned [heads, d_k]. The scores are
    computed ADDITIVE_KEY_CHUNK keys at a time, each piece rematerialised in the backward pass, so the
    [b, q, k, h, d_k] tensor is never whole (the same numbers: each score is one key's own sum)."""
    q32, k32 = query.astype(jnp.float32), key.astype(jnp.float32)
    chunks = range(0, key.shape[1], ADDITIVE_KEY_CHUNK)
    pieces = [jax.checkpoint(additive_scores)(q32, k32[:, s : s + ADDITIVE_KEY_CHUNK], v) for s in chunks]
    logits = pieces[0] if len(pieces) == 1 else jnp.concatenate(pieces, axis=-1)  # [b, h, q, k]
    weights = softmax_weights(logits, bias, dropout_rate, dropout_rng, deterministic)
    return precision.einsum("bhqk,bkhd->bqhd", weights, value, dtype)


def additive_scores(query, key, v):
    """[b, h, q, k] scores vᵀ tanh(q_i + k_j) of float32 query [b, q, h, d] and key [b, k, h, d]."""
    hidden = jnp.tanh(query[:, :, None] + key[:, None])  # [b, q, k, h, d]
    return jnp.einsum("bqkhd,hd->bhqk", hidden, v)


def relative(
    query,
    key,
    value,
    bias,
    *,
    rel_key,
    rel_value,
    query_offset=0,
    dropout_rate=0.0,
    dropout_rng=None,
    deterministic=True,
    dtype="float32",
):
    """Relative position representations (Shaw et al. 2018; T2T ``dot_product_relative``): learned
    [2k+1, d] key and value embeddings of the clipped distance j - i, shared across heads.
    ``query_offset``: the absolute position of the first query (a cached decoding step's index)."""
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
