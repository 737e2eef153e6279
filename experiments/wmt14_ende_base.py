"""Table 2, Transformer base, WMT14 EN->DE: the paper's recipe for an 8-GPU host or a TPU slice.

The packaged config t2t_jax/configs/wmt14_ende_base.py (``--config wmt14_ende_base`` from any directory);
this file keeps the checkout path ``--config experiments/wmt14_ende_base.py`` working.
"""

from t2t_jax.configs.wmt14_ende_base import get_config  # noqa: F401
