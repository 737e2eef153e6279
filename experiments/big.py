"""Transformer big, WMT14 EN-DE (Table 3 "big"): d 1024, d_ff 4096, 16 heads, P_drop 0.3, 300k steps.

The packaged config t2t_jax/configs/big.py (``--config big`` from any directory);
this file keeps the checkout path ``--config experiments/big.py`` working.
"""

from t2t_jax.configs.big import get_config  # noqa: F401
