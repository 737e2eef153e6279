"""The Transformer model: config, attention variants, layers, encoder-decoder.

``Transformer`` is imported on first use, so ``t2t_jax.model.config`` (and the variant registry it reads)
validates a config without importing Flax.
"""

from t2t_jax.errors import ConfigError
from t2t_jax.model.config import ModelConfig

__all__ = ["ConfigError", "ModelConfig", "Transformer"]


def __getattr__(name):
    if name == "Transformer":
        from t2t_jax.model.transformer import Transformer

        return Transformer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
