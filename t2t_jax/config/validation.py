"""Run-config values checked at load time, by allowed set and by range, so a typo fails before anything runs.

The model section is validated by ``ModelConfig`` (model/config.py); this covers the other sections.  A
rule names the key, the value given and what is allowed: ``train.nonfinite = 'skp': choose one of ...``.
"""

from __future__ import annotations

from t2t_jax.errors import ConfigError

CHOICES = {
    "train.nonfinite": ("stop", "skip"),
    "parallel.launcher": ("mesh", "pmap"),
    "data.spm_model_type": ("bpe", "unigram", "char", "word"),
}
AT_LEAST_ONE = (
    "train.steps",
    "train.log_every",
    "train.eval_every",
    "train.accum_steps",
    "checkpoint.keep",
    "data.batch_tokens",
    "data.max_length",
    "data.spm_max_sentences",
    "parallel.sync_every",
    "parallel.num_processes",
    "parallel.heartbeat_seconds",
    "train.bleu_beam",
    "final.beam",
)
NOT_NEGATIVE = (
    "train.max_minutes",
    "train.bleu_every",
    "train.bleu_sentences",
    "train.eval_batches",
    "checkpoint.every_steps",
    "checkpoint.every_minutes",
    "data.eval_tokens",
    "data.preprocess_workers",
    "data.prefetch_batches",
    "parallel.watchdog_seconds",
    "parallel.process_id",
    "final.average_last",
    "final.alpha",
    "optimizer.warmup_steps",
    "optimizer.cooldown_fraction",
    "optimizer.clip_norm",
    "optimizer.weight_decay",
    "optimizer.constant",
)
UNIT_INTERVAL = ("train.label_smoothing", "optimizer.b1", "optimizer.b2")  # [0, 1)


def _value(config, key):
    section, name = key.split(".")
    return config[section][name]


def validate_run_config(config) -> None:
    """Raise one ConfigError for the first value outside its allowed set or range."""
    for key, choices in CHOICES.items():
        if _value(config, key) not in choices:
            raise ConfigError(f"{key} = {_value(config, key)!r}: choose one of {', '.join(choices)}")
    for key in AT_LEAST_ONE:
        if _value(config, key) < 1:
            greedy = " (beam 1 is greedy search)" if key.endswith("beam") else ""
            raise ConfigError(f"{key} = {_value(config, key)!r}: must be at least 1{greedy}")
    for key in NOT_NEGATIVE:
        if _value(config, key) < 0:
            raise ConfigError(f"{key} = {_value(config, key)!r}: must be >= 0 (0 = off where the key allows it)")
    for key in UNIT_INTERVAL:
        if not 0 <= _value(config, key) < 1:
            raise ConfigError(f"{key} = {_value(config, key)!r}: must be in [0, 1)")
    if config.parallel.process_id >= config.parallel.num_processes > 1:
        raise ConfigError(
            f"parallel.process_id = {config.parallel.process_id}: must be below "
            f"parallel.num_processes = {config.parallel.num_processes}"
        )
