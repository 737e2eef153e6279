"""Run configuration: the full schema with paper defaults, config-file loading and overrides."""

from t2t_jax.config.defaults import default_config
from t2t_jax.config.loading import load_config, model_config

__all__ = ["default_config", "load_config", "model_config"]
