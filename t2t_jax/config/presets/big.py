"""Transformer big (Table 3 "big"): the base model with d 1024, d_ff 4096, 16 heads, P_drop 0.3, 300k steps."""

from t2t_jax.config.presets import base


def make_big(c):
    """The big model's changes, applied to ``c`` (the base model or a recipe derived from it)."""
    c.model.update(d_model=1024, d_ff=4096, num_heads=16, dropout=0.3)
    c.train.steps = 300_000
    return c


def get_config():
    return make_big(base.get_config())
