"""The Transformer model: config, layers, attention registry, encoder-decoder."""

from t2t_jax.model.config import ConfigError, ModelConfig
from t2t_jax.model.transformer import Transformer

__all__ = ["ConfigError", "ModelConfig", "Transformer"]
