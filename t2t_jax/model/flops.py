"""Analytic matmul FLOPs of the Transformer, for throughput and MFU figures.

Counts 2·m·n·k for every matmul of the forward pass: projections, attention
scores and weighted values (per the sublayer's variant record), FFN, and the
output projection. Local windows are not discounted (the masked products are computed). A training step
is taken as 3× the forward pass (forward + two backward matmuls per matmul).
"""

from __future__ import annotations

from t2t_jax.model.config import ModelConfig


def _attention(cfg: ModelConfig, kind: str, batch: int, q_len: int, kv_len: int) -> int:
    """Projections (keys/values for the kv heads only) + the variant's per-(query, key, head) products."""
    h, kv, dk, dv, d = cfg.num_heads, cfg.key_value_heads, cfg.head_dim_k, cfg.head_dim_v, cfg.d_model
    projections = 2 * batch * (q_len * d * h * dk + kv_len * d * kv * (dk + dv) + q_len * h * dv * d)
    pairs = batch * h * q_len * kv_len
    return projections + pairs * cfg.attention_variant(kind).pair_flops(dk, dv)


def _ffn(cfg: ModelConfig, tokens: int) -> int:
    return 2 * tokens * 2 * cfg.d_model * cfg.d_ff


def forward_flops(cfg: ModelConfig, batch: int, source_len: int, target_len: int) -> int:
    encoder = cfg.encoder_layers * (
        _attention(cfg, "encoder_self", batch, source_len, source_len) + _ffn(cfg, batch * source_len)
    )
    decoder = cfg.decoder_layers * (
        _attention(cfg, "decoder_self", batch, target_len, target_len)
        + _attention(cfg, "cross", batch, target_len, source_len)
        + _ffn(cfg, batch * target_len)
    )
    logits = 2 * batch * target_len * cfg.d_model * cfg.vocab_size
    return encoder + decoder + logits


def train_step_flops(cfg: ModelConfig, batch: int, source_len: int, target_len: int) -> int:
    return 3 * forward_flops(cfg, batch, source_len, target_len)
