"""The Transformer model: config, layers, attention registry, encoder-decoder."""

from t2t_jax.errors import ConfigError
from t2t_jax.model.config import ModelConfig
from t2t_jax.model.transformer import Transformer

__all__ = ["ConfigError", "ModelConfig", "Transformer"]
