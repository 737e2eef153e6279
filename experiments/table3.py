"""Table 3 of the paper, one named row each: ``--config table3:B_dk16``.

The packaged config t2t_jax/configs/table3.py (``--config table3`` from any directory);
this file keeps the checkout path ``--config experiments/table3.py`` working.
"""

from t2t_jax.configs.table3 import PAPER, ROWS, get_config  # noqa: F401
