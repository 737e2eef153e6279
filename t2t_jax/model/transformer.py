"""Encoder, Decoder and the Transformer (Vaswani et al. 2017, §3) as pure flax.linen modules.

Shapes: tokens [batch, length] int32; activations [batch, length, d_model] in
the compute dtype; logits [batch, target_length, vocab] float32.  Segment ids
(1..n, 0 = pad) and per-segment positions come with packed batches; without
them every row is one example padded with pad_id.
"""

from __future__ import annotations

import flax.linen as nn
import jax.numpy as jnp

from t2t_jax.model import decode_cache, masks, precision
from t2t_jax.model.attention import MultiHeadAttention
from t2t_jax.model.config import ModelConfig
from t2t_jax.model.decode_cache import DecodeStep
from t2t_jax.model.dropout import dropout_rows
from t2t_jax.model.layers import Dropout, FeedForward, LayerNorm, PositionSignal, SharedEmbedding


class EncoderLayer(nn.Module):
    config: ModelConfig

    @nn.compact
    def __call__(self, x, self_bias, rows):
        cfg = self.config
        attn = MultiHeadAttention(cfg, kind="encoder_self", name="self_attn")
        ffn = FeedForward(cfg, name="ffn")
        x = _residual(self, "ln_attn", x, lambda y: attn(y, y, self_bias, rows), rows)
        return _residual(self, "ln_ffn", x, lambda y: ffn(y, rows), rows)


class DecoderLayer(nn.Module):
    config: ModelConfig

    @nn.compact
    def __call__(self, x, encoded, self_bias, cross_bias, rows, step: DecodeStep | None = None):
        cfg = self.config
        decoding = step is not None
        self_attn = MultiHeadAttention(cfg, kind="decoder_self", name="self_attn")
        cross_attn = MultiHeadAttention(cfg, kind="cross", name="cross_attn")
        ffn = FeedForward(cfg, name="ffn")
        x = _residual(
            self,
            "ln_self",
            x,
            lambda y: self_attn(y, y, self_bias, rows, decode="self" if decoding else None, step=step),
            rows,
        )
        x = _residual(
            self,
            "ln_cross",
            x,
            lambda y: cross_attn(y, encoded, cross_bias, rows, decode="cross" if decoding else None, step=step),
            rows,
        )
        return _residual(self, "ln_ffn", x, lambda y: ffn(y, rows), rows)


def _residual(module, ln_name, x, fn, rows):
    """One sublayer with its LayerNorm params at ``<layer>/<ln_name>/{scale,bias}``."""
    cfg = module.config
    norm = LayerNorm(cfg.ln_epsilon, cfg.dtype, name=ln_name)
    drop = Dropout(cfg.dropout)
    if cfg.ln == "pre":
        return x + drop(fn(norm(x)), rows)
    return norm(x + drop(fn(x), rows))


class Encoder(nn.Module):
    config: ModelConfig
    embed: SharedEmbedding

    @nn.compact
    def __call__(self, inputs, segments, positions, rows):
        cfg = self.config
        x = PositionSignal(cfg, name="pos_embed")(self.embed(inputs), positions)
        x = Dropout(cfg.dropout)(x, rows)
        bias = masks.attention_bias(segments, segments, window=cfg.local_window)
        for i in range(cfg.encoder_layers):
            x = EncoderLayer(cfg, name=f"layer_{i}")(x, bias, rows)
        if cfg.ln == "pre":
            x = LayerNorm(cfg.ln_epsilon, cfg.dtype, name="ln_final")(x)
        return x


class Decoder(nn.Module):
    config: ModelConfig
    embed: SharedEmbedding

    @nn.compact
    def __call__(
        self, encoded, input_segments, decoder_inputs, segments, positions, rows, step: DecodeStep | None = None
    ):
        """Teacher-forced logits, or (``step`` set) logits of one cached step with [batch * beam, 1] inputs."""
        cfg = self.config
        y = PositionSignal(cfg, name="pos_embed")(self.embed(decoder_inputs), positions)
        y = Dropout(cfg.dropout)(y, rows)
        if step is None:
            self_bias = masks.attention_bias(segments, segments, causal=True, window=cfg.local_window)
            cross_bias = masks.attention_bias(segments, input_segments)
        else:
            self_bias = decode_cache.self_bias(step, cfg.local_window)
            cross_bias = decode_cache.cross_bias(input_segments)
        for i in range(cfg.decoder_layers):
            y = DecoderLayer(cfg, name=f"layer_{i}")(y, encoded, self_bias, cross_bias, rows, step)
        if cfg.ln == "pre":
            y = LayerNorm(cfg.ln_epsilon, cfg.dtype, name="ln_final")(y)
        return self.embed.attend(y)


class Transformer(nn.Module):
    """encode(inputs) -> memory; decode(memory, targets) -> logits; __call__ = both."""

    config: ModelConfig

    def __post_init__(self):
        if self.config.dtype == "auto":  # a config straight from a recipe: this machine's compute dtype
            object.__setattr__(self, "config", precision.resolve_dtype(self.config)[0])
        super().__post_init__()

    def setup(self):
        self.embed = SharedEmbedding(self.config)
        self.encoder = Encoder(self.config, self.embed)
        self.decoder = Decoder(self.config, self.embed)

    def encode(
        self,
        inputs,
        inputs_segmentation: jnp.ndarray | None = None,
        inputs_position: jnp.ndarray | None = None,
        deterministic: bool = True,
        example_ids=None,
    ):
        segments = self._segments(inputs, inputs_segmentation)
        rows = dropout_rows(inputs.shape[0], deterministic, example_ids)
        return self.encoder(inputs, segments, inputs_position, rows)

    def decode(
        self,
        encoded,
        inputs,
        targets,
        inputs_segmentation=None,
        targets_segmentation=None,
        targets_position=None,
        deterministic: bool = True,
        example_ids=None,
    ):
        """Teacher-forced logits for ``targets`` (shifted right per segment inside)."""
        input_segments = self._segments(inputs, inputs_segmentation)
        target_segments = self._segments(targets, targets_segmentation)
        decoder_inputs = masks.shift_right(targets, target_segments, self.config.pad_id)
        rows = dropout_rows(targets.shape[0], deterministic, example_ids)
        return self.decoder(encoded, input_segments, decoder_inputs, target_segments, targets_position, rows)

    def __call__(
        self,
        inputs,
        targets,
        inputs_segmentation=None,
        targets_segmentation=None,
        inputs_position=None,
        targets_position=None,
        deterministic: bool = True,
        example_ids=None,
    ):
        encoded = self.encode(inputs, inputs_segmentation, inputs_position, deterministic, example_ids)
        return self.decode(
            encoded,
            inputs,
            targets,
            inputs_segmentation,
            targets_segmentation,
            targets_position,
            deterministic,
            example_ids,
        )

    def decode_step(self, encoded, input_segments, tokens, step: DecodeStep):
        """Logits [batch * beam, vocab] for one step: ``tokens`` [batch * beam] are the previous outputs
        (pad at step 0) of each sentence's ``step.beam`` hypotheses, ``step.index`` the position being
        predicted; ``encoded`` / ``input_segments`` are per sentence ([batch, ...], never repeated per
        beam). Keys/values live in the mutable "cache" collection: self-attention in fixed buffers
        written in place, cross-attention projected on the first step only (layouts: decode_cache.py)."""
        tokens = tokens[:, None]
        segments = jnp.ones_like(tokens)
        positions = jnp.full_like(tokens, step.index)
        return self.decoder(encoded, input_segments, tokens, segments, positions, None, step=step)[:, 0]

    def _segments(self, tokens, segmentation):
        if segmentation is not None:
            return segmentation
        return masks.segments_from_tokens(tokens, self.config.pad_id)
