"""Dataset selection by ``config.data.dataset``: returns training and evaluation batch sources."""
from __future__ import annotations

from t2t_jax.data import toy
from t2t_jax.model.config import ConfigError

TOY_PREFIX = "toy_"
EVAL_SEED_OFFSET = 10_007  # evaluation batches come from a different stream than training


def make_data(config):
    """(train iterator with get_state/set_state, function n -> list of eval batches)."""
    data = config.data
    if data.dataset.startswith(TOY_PREFIX):
        task = data.dataset[len(TOY_PREFIX):]
        if task not in toy.TASKS:
            raise ConfigError(f"data.dataset = {data.dataset!r}: toy tasks are "
                              f"{[TOY_PREFIX + t for t in toy.TASKS]}")
        kwargs = dict(batch_size=max(data.batch_tokens // data.max_length, 1), length=data.max_length,
                      vocab=data.toy_vocab, min_len=data.toy_min_length, max_len=data.toy_max_length)
        train = toy.ToyBatches(task, seed=config.train.seed, **kwargs)

        def eval_batches(count):
            return [toy.toy_batch(task, i, seed=config.train.seed + EVAL_SEED_OFFSET, **kwargs)
                    for i in range(count or 8)]

        return train, eval_batches
    raise ConfigError(f"data.dataset = {data.dataset!r} is not available; known here: "
                      f"{[TOY_PREFIX + t for t in toy.TASKS]}")
