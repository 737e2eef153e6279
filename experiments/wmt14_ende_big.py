"""Table 2, Transformer big, WMT14 EN->DE: d 1024, d_ff 4096, 16 heads, P_drop 0.3, 300k steps, average 20.

The packaged config t2t_jax/configs/wmt14_ende_big.py (``--config wmt14_ende_big`` from any directory);
this file keeps the checkout path ``--config experiments/wmt14_ende_big.py`` working.
"""

from t2t_jax.configs.wmt14_ende_big import get_config  # noqa: F401
