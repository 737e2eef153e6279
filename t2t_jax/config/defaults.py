"""The complete run-config schema. Experiment files start from this and change a few lines.

Every key a user may set exists here, so an override of a key that is not here
is a typo and is rejected (see loading.py).  Defaults are the paper's base
model on WMT14 EN-DE (Vaswani et al. 2017, §5, Table 3 "base").
"""

from __future__ import annotations

import dataclasses

import ml_collections

from t2t_jax.model.config import ModelConfig


def default_config() -> ml_collections.ConfigDict:
    c = ml_collections.ConfigDict()
    c.model = ml_collections.ConfigDict(dataclasses.asdict(ModelConfig()))

    c.optimizer = optimizer_config()

    c.train = ml_collections.ConfigDict()
    c.train.steps = 100_000
    c.train.max_minutes = 0.0  # wall-clock training budget, summed over resumes (0 = none): save and stop at it
    c.train.label_smoothing = 0.1
    c.train.seed = 0
    c.train.log_every = 100
    c.train.eval_every = 1000
    c.train.eval_batches = 0  # 0 = the whole validation split
    c.train.bleu_every = 0  # steps between dev-BLEU decodes of the validation split (0 = off); keys the best slot
    c.train.bleu_sentences = 0  # validation sentences decoded for dev BLEU (0 = all)
    c.train.bleu_beam = 4  # beam for dev BLEU (1 = greedy, faster)
    c.train.accum_steps = 1  # micro-batches per update (lax.scan inside the step)

    c.train.tensorboard = True  # event files in <workdir>/tensorboard (scalars, dev BLEU, sample translations)
    c.train.nonfinite = "stop"  # a NaN/inf loss: "stop" (error naming the step) or "skip" (drop that update)

    c.final = ml_collections.ConfigDict()  # after training (not after a preemption): see train/finish.py
    c.final.average_last = 0  # average the newest N checkpoints into <workdir>/averaged (0/1 = off)
    c.final.splits = ""  # comma-separated splits to decode and score at the end, e.g. "test"
    c.final.beam = 4  # §6.1: beam 4, alpha 0.6
    c.final.alpha = 0.6
    c.final.select_on = ""  # "validation": choose the two below by dev sacreBLEU before decoding final.splits
    c.final.average_choices = ""  # e.g. "1,3,5,8": checkpoint counts to average (empty = final.average_last)
    c.final.alpha_choices = ""  # e.g. "0.6,1.0": length-penalty alphas (empty = final.alpha)

    c.checkpoint = ml_collections.ConfigDict()
    c.checkpoint.every_steps = 1000
    c.checkpoint.every_minutes = 10.0  # the paper wrote one every 10 minutes (§6.1); 0 = off
    c.checkpoint.keep = 20  # >= 20 so big-model averaging (last 20) works
    c.checkpoint.async_save = True

    c.parallel = parallel_config()

    c.data = ml_collections.ConfigDict()
    c.data.dataset = "wmt14_translate/de-en"
    c.data.source_lang = "en"
    c.data.target_lang = "de"
    c.data.batch_tokens = 32_768  # per side, per global batch: 128 rows of max_length 256 (§5.1: ~25k tokens a side)
    c.data.max_length = 256  # longest training example kept, in wordpieces per side (= packed row length)
    c.data.eval_tokens = 0  # tokens per evaluation batch; 0 = data.batch_tokens
    c.data.data_dir = ""  # local corpora root; empty = $T2T_DATA_DIR
    c.data.train_prefix = ""  # parallel_text: path without the .{lang} suffix
    c.data.validation_prefix = ""
    c.data.test_prefix = ""
    c.data.tfds_data_dir = ""  # tensorflow-datasets data_dir; empty = tfds default
    c.data.spm_model_type = "bpe"  # shared sentencepiece vocabulary of model.vocab_size pieces
    c.data.spm_max_sentences = 1_000_000  # sentences sampled to train it
    # Token ids written once (data/preprocess.py) and streamed from there; empty = <workdir>/tokenized.
    c.data.tokenized_dir = ""
    c.data.preprocess_workers = 0  # processes encoding the training split; 0 = every CPU core
    c.data.prefetch_batches = 2  # training batches packed ahead in a thread
    c.data.toy_vocab = 32  # generated tasks only
    c.data.toy_min_length = 4
    c.data.toy_max_length = 16
    return c


def optimizer_config() -> ml_collections.ConfigDict:
    """Adam and its learning-rate schedule (train/state.py, train/schedule.py, train/cooldown.py)."""
    o = ml_collections.ConfigDict()
    o.schedule = "constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size"  # §5.3
    o.constant = 1.0
    o.warmup_steps = 4000
    o.cooldown_fraction = 0.0  # for a schedule ending in *linear_cooldown: last part of train.steps
    o.cooldown_by_budget = False  # also start it at 1 - that of train.max_minutes (train/cooldown.py)
    o.b1 = 0.9
    o.b2 = 0.98
    o.eps = 1e-9
    o.weight_decay = 0.0
    o.clip_norm = 0.0  # 0 = no clipping (the paper clips nothing)
    return o


def parallel_config() -> ml_collections.ConfigDict:
    """Launcher, process group and the multi-process control knobs (train/control.py, train/watchdog.py)."""
    p = ml_collections.ConfigDict()
    p.launcher = "mesh"  # mesh: jit(shard_map) over Mesh(devices, ("data",)); or pmap
    p.coordinator_address = ""  # host:port of process 0; empty = single process
    p.num_processes = 1
    p.process_id = 0
    p.auto_detect = False  # TPU pods / SLURM: let jax.distributed find everything
    # Multi-process control (train/control.py, train/watchdog.py): the processes agree every sync_every steps on
    # timed saves, the time budget and signals (a signal is acted on within sync_every steps); a wait on the other
    # processes longer than watchdog_seconds ends the process with an error naming it (0 = no watchdog).
    p.sync_every = 10
    p.watchdog_seconds = 900.0
    p.heartbeat_seconds = 100  # jax.distributed: a process silent this long is declared dead
    return p
