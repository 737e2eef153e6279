"""The quick start's config: t2t_jax/configs/multi30k_quick.py (``--config multi30k_quick`` from anywhere)."""

from t2t_jax.configs.multi30k_quick import get_config  # noqa: F401
