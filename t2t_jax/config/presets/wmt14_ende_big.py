"""Table 2, Transformer big, WMT14 EN->DE: d 1024, d_ff 4096, 16 heads, P_drop 0.3, 300k steps, average 20.

Same data, batch and schedule as wmt14_ende_base.py (§6.1: 3.5 days on 8 P100s). Paper: 28.4 BLEU.
"""

from t2t_jax.config.presets import big, wmt14_ende_base


def get_config():
    c = big.make_big(wmt14_ende_base.get_config())
    c.train.bleu_every = 20_000
    c.final.average_last = 20  # §6.1: big = average of the last 20 checkpoints
    return c
