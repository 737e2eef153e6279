"""The packaged config t2t_jax/configs/multi30k_deen.py (``--config multi30k_deen`` from any directory);
this file keeps the checkout path ``--config experiments/multi30k_deen.py`` working."""

from t2t_jax.configs.multi30k_deen import get_config  # noqa: F401
