"""Multi30k EN->DE on 2 CPU cores: a small post-LN Transformer, shared 8k BPE, packed 64-token rows.

The packaged config t2t_jax/configs/multi30k.py (``--config multi30k`` from any directory);
this file keeps the checkout path ``--config experiments/multi30k.py`` working.
"""

from t2t_jax.configs.multi30k import get_config  # noqa: F401
