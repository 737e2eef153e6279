"""Transformer base, WMT14 EN-DE (Vaswani et al. 2017, Table 3 "base"): 65M params, 100k steps."""

from t2t_jax.config.defaults import default_config


def get_config():
    c = default_config()
    c.model.vocab_size = 37000  # shared BPE vocabulary (§5.1)
    c.model.d_model = 512
    c.model.num_heads = 8
    c.model.d_ff = 2048
    c.model.encoder_layers = c.model.decoder_layers = 6
    c.model.dropout = 0.1
    c.train.label_smoothing = 0.1
    c.train.steps = 100_000
    c.optimizer.warmup_steps = 4000
    c.data.max_length = 256
    # §5.1: ~25k source + ~25k target tokens per step. 128 packed rows of 256 token slots (packed rows are not
    # full): an equal share on 8, 16, 32, 64 or 128 devices; beyond 128 one row per device is already more.
    c.data.batch_tokens = 32_768
    return c
