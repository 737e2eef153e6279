"""Forced decoding: the model's log-probability of given translations (fairseq ``--score-reference``, CTranslate2
``score_batch``, ``marian-scorer``), for filtering parallel data, reranking other systems' outputs, or checking an
export. One teacher-forced forward pass per batch, in the same length-bucketed shapes as translation."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from t2t_jax.data.pipeline import batch_plan, pad_batch
from t2t_jax.errors import ConfigError, DataError
from t2t_jax.model import Transformer
from t2t_jax.model.config import ModelConfig

# Padded tokens per batch of (source, target) pairs: one teacher-forced forward pass a batch (not a search).
SCORE_TOKENS_PER_BATCH = 512


@dataclasses.dataclass(frozen=True)
class PairScore:
    """The score of one (source, target) pair."""

    total: float  # log P(target | source): the sum over the target's tokens and its EOS
    normalized: float  # total / tokens: the mean log-probability per token
    tokens: int  # target tokens scored, EOS included (0 for an empty pair, which is not scored)
    per_token: list | None = None  # each token's log-probability, when asked for


@functools.partial(jax.jit, static_argnames=("cfg",))
def token_log_probs(params, inputs, targets, *, cfg: ModelConfig):
    """[batch, target_len] float32: log P(targets[b, t] | inputs[b], targets[b, :t]), 0 at padding."""
    logits = Transformer(cfg).apply({"params": params}, inputs, targets)  # [b, t, vocab] float32
    log_probs = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    picked = jnp.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]  # [b, t]
    return jnp.where(targets != cfg.pad_id, picked, 0.0)


def score_texts(
    sources,
    targets,
    tokenizer,
    params,
    cfg: ModelConfig,
    *,
    per_token: bool = False,
    tokens_per_batch: int = SCORE_TOKENS_PER_BATCH,
    progress=None,
) -> list[PairScore]:
    """The score of every (source, target) line pair, in input order. A pair with an empty side scores 0 over
    0 tokens (kept, so outputs stay line-aligned); a side longer than model.max_len tokens is an error."""
    if isinstance(cfg, tuple):
        raise ConfigError("scoring reads one model: give one workdir, not an ensemble")
    sources, targets = list(sources), list(targets)
    if len(sources) != len(targets):
        raise DataError(f"{len(sources)} source lines but {len(targets)} target lines: pairs must be line-aligned")
    source_ids, target_ids = tokenizer.encode_batch(sources), tokenizer.encode_batch(targets)
    for side, ids in (("source", source_ids), ("target", target_ids)):
        longest = max(range(len(ids)), key=lambda i: len(ids[i]), default=None)
        if longest is not None and len(ids[longest]) > cfg.max_len:
            raise DataError(
                f"{side} line {longest + 1} has {len(ids[longest])} tokens (EOS included), more than "
                f"model.max_len = {cfg.max_len}: scoring it would cut the sentence"
            )
    results = [PairScore(0.0, 0.0, 0, [] if per_token else None) for _ in sources]
    length = lambda i: max(len(source_ids[i]), len(target_ids[i]))  # noqa: E731
    todo = sorted((i for i in range(len(sources)) if sources[i].strip() and targets[i].strip()), key=length)
    done = 0
    for start, count, rows, width in batch_plan([length(i) for i in todo], tokens_per_batch, cfg.max_len):
        chosen = todo[start : start + count]
        inputs = pad_batch([source_ids[i] for i in chosen], rows, width, cfg.pad_id)
        outputs = pad_batch([target_ids[i] for i in chosen], rows, width, cfg.pad_id)
        log_probs = np.asarray(jax.device_get(token_log_probs(params, inputs, outputs, cfg=cfg)))
        for row, i in enumerate(chosen):
            tokens = len(target_ids[i])
            values = log_probs[row, :tokens].astype(np.float64)
            total = float(values.sum())
            results[i] = PairScore(total, total / tokens, tokens, values.tolist() if per_token else None)
        done += count
        if progress:
            progress(done, len(todo))
    return results
