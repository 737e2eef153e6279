"""The quick start: Multi30k EN->DE in 3 minutes of training on 2 CPU cores, then test BLEU — a first model, not
a good one (config/presets/multi30k.py is the main job). d 128, 2+2 layers, the main job's compute dtype
(auto), the main job's schedule with its cooldown started by the time budget."""

from t2t_jax.config.presets import multi30k


def get_config():
    c = multi30k.get_config()
    c.model.update(vocab_size=4000, d_model=128, num_heads=4, d_ff=512, encoder_layers=2, decoder_layers=2)
    c.model.update(dropout=0.1)
    c.data.batch_tokens = 2048  # per side: 32 packed rows of 64
    c.optimizer.warmup_steps = 300
    c.train.steps = 2000  # an upper bound: the 3-minute budget ends the run, its cooldown started by time
    c.train.max_minutes = 3.0
    c.train.eval_every = 200
    c.train.bleu_every = 0
    c.train.log_every = 50
    c.checkpoint.every_steps = 100
    c.final.select_on = ""  # no choice on val: average the last 3 checkpoints, then decode test once
    c.final.average_last = 3
    c.final.alpha = 0.6
    return c
