"""Table 2, Transformer big, WMT14 EN->FR: 36M pairs, 32k word-piece vocabulary, P_drop 0.1 (§6.1).

The packaged config t2t_jax/configs/wmt14_enfr_big.py (``--config wmt14_enfr_big`` from any directory);
this file keeps the checkout path ``--config experiments/wmt14_enfr_big.py`` working.
"""

from t2t_jax.configs.wmt14_enfr_big import get_config  # noqa: F401
