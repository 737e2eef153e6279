"""Run configuration, in one place: the full schema with paper defaults (defaults.py), its checks
(validation.py), loading a config with ``--config.a.b=v`` overrides (loading.py), and the packaged presets
(presets/).

    import t2t_jax
    config = t2t_jax.config.get("multi30k", "--config.train.max_minutes=10")
"""

from t2t_jax.config.defaults import default_config
from t2t_jax.config.loading import load_config, model_config
from t2t_jax.config.presets import names

__all__ = ["default_config", "get", "load_config", "model_config", "names"]


def get(spec: str, *overrides: str):
    """A validated run config: ``spec`` is a packaged name (``"multi30k"``, ``"table3:B_dk16"``) or a config
    file path; ``overrides`` are ``--config.a.b=value`` strings as on the command line."""
    return load_config(spec, overrides)
