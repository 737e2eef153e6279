"""Multi30k EN->DE on 2 CPU cores: a small post-LN Transformer, shared 8k BPE, packed 64-token rows.

Data: $T2T_DATA_DIR/multi30k (or --config.data.data_dir); dev = val, report = test_2016_flickr.
"""

from t2t_jax.config.defaults import default_config


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
        dtype="auto",  # bfloat16 where matmuls are faster in it (GPU, TPU, CPUs with AMX), else float32
    )
    c.optimizer.schedule += "*linear_cooldown"  # rsqrt, then linearly to 0 over the last 30 % of train.steps
    c.optimizer.cooldown_fraction = 0.3
    c.optimizer.cooldown_by_budget = True  # a machine too slow for step 3220 by minute 59.5 starts cooling there
    c.optimizer.constant = 2.0
    c.optimizer.warmup_steps = 1000
    c.train.label_smoothing = 0.1
    c.train.steps = 4600  # ~82 min on a 2-core CPU with AMX (1.07 s/step with dev evaluation, measured)
    c.train.max_minutes = 85.0  # a slower machine stops here, its cooldown started by time (cooldown_by_budget)
    c.train.bleu_every = 500  # greedy dev BLEU on all of val (≈0.5 min) keys the best slot
    c.train.bleu_beam = 1
    c.train.log_every = 50
    c.train.eval_every = 250
    c.final.select_on = "validation"  # then choose on val, by beam-4 sacreBLEU, how many of the newest
    c.final.average_choices = "1,3,5,8"  # checkpoints to average (every 250 steps: up to the last ~2000)
    c.final.alpha_choices = "0.6,1.0"  # and the length penalty ...
    c.final.average_last = 5  # (the count used without select_on)
    c.final.splits = "test"  # ... and report test_2016_flickr with that choice, beam 4
    c.checkpoint.every_steps = 250
    c.checkpoint.every_minutes = 10.0
    return c
