"""Transformer big, WMT14 EN-DE (Table 3 "big"): d 1024, d_ff 4096, 16 heads, P_drop 0.3, 300k steps."""

from t2t_jax.configs import base


def get_config():
    c = base.get_config()
    c.model.d_model = 1024
    c.model.d_ff = 4096
    c.model.num_heads = 16
    c.model.dropout = 0.3
    c.train.steps = 300_000
    return c
