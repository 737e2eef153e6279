"""The packaged config t2t_jax/configs/multi30k_enfr.py (``--config multi30k_enfr`` from any directory);
this file keeps the checkout path ``--config experiments/multi30k_enfr.py`` working."""

from t2t_jax.configs.multi30k_enfr import get_config  # noqa: F401
