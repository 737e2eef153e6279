"""A tiny model on a generated sequence-reversal task: trains to ~100% accuracy in about a minute on 2 CPU cores.

The packaged config t2t_jax/configs/smoke.py (``--config smoke`` from any directory);
this file keeps the checkout path ``--config experiments/smoke.py`` working.
"""

from t2t_jax.configs.smoke import get_config  # noqa: F401
