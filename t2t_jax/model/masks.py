"""Additive attention biases from segment ids: same segment, non-pad, optionally causal.

Segment ids are 1..n for real tokens and 0 for padding; an unpacked batch is
the special case of one segment per row.
"""

from __future__ import annotations

import jax.numpy as jnp

NEG_INF = -1e9  # finite, so a fully masked (pad) query row gives a uniform, not NaN, softmax


def segments_from_tokens(tokens, pad_id: int):
    """Segment ids of an unpacked batch: 1 for real tokens, 0 for padding."""
    return (tokens != pad_id).astype(jnp.int32)


def attention_bias(query_segments, key_segments, causal: bool = False, window: int = 0):
    """[batch, 1, q_len, k_len] float32 bias: 0 where attending is allowed, NEG_INF elsewhere.

    ``window`` > 0 (self-attention only) also hides keys more than ``window`` positions away
    (segments are contiguous, so row distance is distance within the segment)."""
    allowed = (query_segments[:, :, None] == key_segments[:, None, :]) & (key_segments[:, None, :] != 0)
    q_len, k_len = query_segments.shape[1], key_segments.shape[1]
    distance = jnp.arange(q_len)[:, None] - jnp.arange(k_len)[None, :]
    if causal:
        allowed = allowed & (distance >= 0)
    if window:
        allowed = allowed & (jnp.abs(distance) <= window)
    return jnp.where(allowed, 0.0, NEG_INF).astype(jnp.float32)[:, None]


def shift_right(targets, segments, start_id: int):
    """Decoder inputs: targets shifted right by one *per segment*, each segment starting with start_id.

    A packed row [a1 a2 EOS b1 EOS] becomes [S a1 a2 S b1]: segment b never sees segment a's EOS.
    """
    shifted = jnp.pad(targets, ((0, 0), (1, 0)), constant_values=start_id)[:, :-1]
    previous_segment = jnp.pad(segments, ((0, 0), (1, 0)), constant_values=-1)[:, :-1]
    return jnp.where(segments != previous_segment, start_id, shifted)
