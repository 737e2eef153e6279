"""Multi30k EN->DE on 2 CPU cores: a small post-LN Transformer, shared 8k BPE, packed 64-token rows.

Data: $T2T_DATA_DIR/multi30k (or --config.data.data_dir); dev = val, report = test_2016_flickr.
"""

from t2t_jax.config import default_config


def get_config():
    c = default_config()
    c.data.dataset = "multi30k"
    c.data.source_lang, c.data.target_lang = "en", "de"
    c.data.max_length = 64
    c.data.batch_tokens = 4096  # per side: 64 packed rows of 64
    c.model.update(
        vocab_size=8000,
        d_model=256,
        num_heads=4,
        d_ff=1024,
        encoder_layers=3,
        decoder_layers=3,
        dropout=0.3,
        max_len=128,
        dtype="bfloat16",
    )
    c.optimizer.constant = 2.0
    c.optimizer.warmup_steps = 1000
    c.train.label_smoothing = 0.1
    c.train.steps = 5000  # an upper bound: the 85-minute budget below ends the run first on 2 cores
    c.train.max_minutes = 85.0
    c.train.bleu_every = 500  # greedy dev BLEU on all of val (≈0.5 min) keys the best slot
    c.train.bleu_beam = 1
    c.train.log_every = 50
    c.train.eval_every = 250
    c.final.average_last = 5  # then average the last 5 checkpoints (the last ~1000 steps) ...
    c.final.splits = "test"  # ... and report test_2016_flickr, beam 4, alpha 0.6
    c.checkpoint.every_steps = 250
    c.checkpoint.every_minutes = 10.0
    return c
