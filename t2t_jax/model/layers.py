"""Building blocks: dropout, shared embedding, positions, LayerNorm, position-wise FFN."""

from __future__ import annotations

import flax.linen as nn
import jax.numpy as jnp

from t2t_jax.model import feature_major, precision
from t2t_jax.model import positions as positions_lib
from t2t_jax.model.config import ModelConfig
from t2t_jax.model.dropout import apply_keep_mask, row_keep_mask


def glorot_uniform(in_axis=0, out_axis=-1):
    """Glorot-uniform computed on the 2-D (fan_in, fan_out) view of a kernel."""
    return nn.initializers.variance_scaling(1.0, "fan_avg", "uniform", in_axis=in_axis, out_axis=out_axis)


class Dropout(nn.Module):
    """Residual / embedding / ReLU dropout with per-example masks (dropout.py); ``rows`` None = off."""

    rate: float

    @nn.compact
    def __call__(self, x, rows):
        if rows is None or self.rate == 0.0:
            return x
        return apply_keep_mask(x, row_keep_mask(self.make_rng("dropout"), rows, x.shape, self.rate), self.rate)


class LayerNorm(nn.Module):
    """LayerNorm with float32 statistics whatever the compute dtype."""

    epsilon: float
    dtype: str

    @nn.compact
    def __call__(self, x):
        features = x.shape[-1]
        scale = self.param("scale", nn.initializers.ones, (features,), jnp.float32)
        bias = self.param("bias", nn.initializers.zeros, (features,), jnp.float32)
        x32 = x.astype(jnp.float32)
        mean = x32.mean(-1, keepdims=True)
        centered = x32 - mean
        var = jnp.mean(centered * centered, -1, keepdims=True)
        y = centered * jnp.reciprocal(jnp.sqrt(var + self.epsilon)) * scale + bias
        return y.astype(self.dtype)


class SharedEmbedding(nn.Module):
    """One table for source input, target input and the pre-softmax projection (§3.4).

    Initialised N(0, d^-0.5) so that inputs scaled by sqrt(d) have unit variance.
    """

    config: ModelConfig

    def setup(self):
        cfg = self.config
        self.embedding = self.param(
            "embedding", nn.initializers.normal(stddev=cfg.d_model**-0.5), (cfg.vocab_size, cfg.d_model), jnp.float32
        )
        if cfg.logits_bias:
            self.logits_bias = self.param("logits_bias", nn.initializers.zeros, (cfg.vocab_size,), jnp.float32)

    def __call__(self, ids):
        scale = jnp.sqrt(jnp.float32(self.config.d_model))
        return (jnp.take(self.embedding, ids, axis=0) * scale).astype(self.config.dtype)

    def attend(self, x):
        """Logits h·Eᵀ (+ Marian's final_logits_bias if configured), in float32 for the loss."""
        if self.has_variable(feature_major.COLLECTION, "embedding"):  # a decoding step at few rows
            embedding = self.get_variable(feature_major.COLLECTION, "embedding")
            logits = feature_major.logits(x, embedding, self.config.dtype)
        else:
            logits = precision.einsum("btd,vd->btv", x, self.embedding, self.config.dtype, jnp.float32)
        return logits + self.logits_bias if self.config.logits_bias else logits


class PositionSignal(nn.Module):
    """Adds positions (counted from 0, per segment when packed) to embeddings."""

    config: ModelConfig

    @nn.compact
    def __call__(self, x, positions=None):
        cfg = self.config
        if cfg.positions == "none":
            return x
        length = x.shape[1]
        if cfg.positions == "learned":
            table = self.param(
                "embedding", nn.initializers.normal(stddev=0.02), (cfg.max_len, cfg.d_model), jnp.float32
            )
        else:
            table = jnp.asarray(positions_lib.FIXED_TABLES[cfg.positions](max(length, cfg.max_len), cfg.d_model))
        if positions is None:
            signal = table[None, :length]
        else:
            signal = jnp.take(table, positions, axis=0)
        return (x.astype(jnp.float32) + signal).astype(cfg.dtype)


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2 (eq. 2; swish optional), kernels named wi / wo."""

    config: ModelConfig

    @nn.compact
    def __call__(self, x, rows):
        cfg = self.config
        h = Dense(cfg.d_model, cfg.d_ff, cfg.dtype, name="wi")(x)
        h = nn.relu(h) if cfg.activation == "relu" else nn.swish(h)
        h = Dropout(cfg.relu_dropout)(h, rows)
        return Dense(cfg.d_ff, cfg.d_model, cfg.dtype, name="wo")(h)


class Dense(nn.Module):
    """A biased dense layer on [batch, length, d_in] inputs (params ``kernel``, ``bias``)."""

    d_in: int
    d_out: int
    dtype: str

    @nn.compact
    def __call__(self, x):
        kernel = self.param("kernel", glorot_uniform(), (self.d_in, self.d_out), jnp.float32)
        bias = self.param("bias", nn.initializers.zeros, (self.d_out,), jnp.float32)
        if self.has_variable(feature_major.COLLECTION, "kernel"):  # a decoding step at few rows
            y = feature_major.dot(x, self.get_variable(feature_major.COLLECTION, "kernel"), self.dtype)
        else:
            y = precision.einsum("btd,df->btf", x, kernel, self.dtype)
        return y + bias.astype(self.dtype)
