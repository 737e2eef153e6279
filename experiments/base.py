"""Transformer base, WMT14 EN-DE (Vaswani et al. 2017, Table 3 "base"): 65M params, 100k steps.

The packaged config t2t_jax/configs/base.py (``--config base`` from any directory);
this file keeps the checkout path ``--config experiments/base.py`` working.
"""

from t2t_jax.configs.base import get_config  # noqa: F401
