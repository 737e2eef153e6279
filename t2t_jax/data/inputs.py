"""The training run's inputs: tokenized once (data/preprocess.py), then streamed per process.

``make_data`` finds or builds the tokenized directory, checks it against the config and the sources, and
returns this process's prefetched training batches plus the (small) validation data.  Start-up reads the
manifest, the lengths table (4 bytes a pair) and opens the shards: it does not grow with the corpus beyond
that, and a resume costs the same as a fresh start.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable

import jax
import numpy as np

from t2t_jax import distributed
from t2t_jax.data import manifest as manifest_lib
from t2t_jax.data import records, toy
from t2t_jax.data.pipeline import PackedTrainBatches, PrefetchedBatches, TokenizedExamples, eval_batches
from t2t_jax.data.sources import TOY_PREFIX, describe_split, split_text
from t2t_jax.data.tokenizer import Tokenizer
from t2t_jax.errors import ConfigError, DataError
from t2t_jax.special_ids import SpecialIds
from t2t_jax.workdir import Workdir, is_url, workdir_path

EVAL_SEED_OFFSET = 10_007  # evaluation batches come from a different stream than training
PREPROCESS_BARRIER_SECONDS = 6 * 3600  # sentencepiece on a big sample plus encoding 36M pairs takes hours
CACHE_ENV = "T2T_CACHE_DIR"  # local cache for URL workdirs; default ~/.cache/t2t_jax


@dataclasses.dataclass
class Data:
    train: object  # iterator of local (per-process) batches with get_state / set_state / remap
    eval_batches: list  # [(global batch, example indices)]
    tokenizer: Tokenizer | None = None
    eval_sources: list | None = None  # raw validation text, for decoding and BLEU
    eval_references: list | None = None


def make_data(config, workdir=None, log: Callable = print) -> Data:
    if config.data.dataset.startswith(TOY_PREFIX):
        return _toy_data(config)
    return _tokenized_data(config, workdir_path(workdir or "."), log)


def tokenized_dir(config, workdir):
    """data.tokenized_dir, else <workdir>/tokenized; for a URL workdir a local cache folder named by the
    manifest key (ArrayRecord reads local or mounted files only)."""
    if config.data.tokenized_dir:
        directory = workdir_path(config.data.tokenized_dir)
    elif not is_url(workdir):
        directory = Workdir(workdir).tokenized
    else:
        digest = hashlib.sha256(json.dumps([str(workdir), manifest_lib.key(config)]).encode()).hexdigest()[:16]
        cache = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "t2t_jax")
        directory = workdir_path(os.path.join(cache, Workdir.TOKENIZED, digest))
    if is_url(directory):
        raise ConfigError(
            f"data.tokenized_dir = {directory}: the tokenized shards are read with random access "
            f"and must be on a local or mounted disk (e.g. gcsfuse), not a URL"
        )
    return directory


def ensure_tokenized(config, workdir, log: Callable = print):
    """(directory, manifest): process 0 builds the directory when it has no manifest, or checks it against
    the config and the sources; the others wait, then check the config part."""
    from t2t_jax.data.preprocess import TOKENIZED_SPLITS, preprocess

    directory = tokenized_dir(config, workdir)
    if jax.process_index() == 0:
        manifest = records.read_manifest(directory)
        if manifest is None:
            vocabulary = Workdir(workdir).vocabulary  # a run started before preprocessing existed keeps its own
            preprocess(config, directory, vocabulary=vocabulary, workers=config.data.preprocess_workers, log=log)
        else:
            sources = {split: describe_split(config, split) for split in TOKENIZED_SPLITS}
            manifest_lib.check(manifest, config, directory, sources)
    distributed.barrier("t2t_preprocess", timeout_seconds=PREPROCESS_BARRIER_SECONDS)
    manifest = records.read_manifest(directory)
    if manifest is None:
        raise DataError(
            f"{directory}: no manifest.json after process 0 prepared it: every process must see the "
            f"same data.tokenized_dir (a shared or mounted disk)"
        )
    manifest_lib.check(manifest, config, directory)
    return directory, manifest


def _tokenized_data(config, workdir, log) -> Data:
    data = config.data
    directory, manifest = ensure_tokenized(config, workdir, log)
    tokenizer = _workdir_vocabulary(directory, manifest, workdir, SpecialIds.of(config.model))
    split = records.TokenizedSplit(directory, "train", manifest)
    keep = np.flatnonzero((split.lengths() <= data.max_length).all(axis=1)).astype(np.int32)
    if not len(keep):
        raise DataError(
            f"train: all {len(split)} pairs are longer than data.max_length = {data.max_length} "
            f"tokens on a side; raise data.max_length"
        )
    if len(keep) < len(split):
        log(
            f"train: filtered {len(split) - len(keep)} of {len(split)} pairs longer than "
            f"data.max_length = {data.max_length}"
        )
    rows = max(data.batch_tokens // data.max_length // jax.process_count(), 1)
    batches = PackedTrainBatches(
        TokenizedExamples(split, keep),
        rows=rows,
        length=data.max_length,
        seed=config.train.seed,
        process_index=jax.process_index(),
        process_count=jax.process_count(),
    )
    eval_src, eval_tgt = split_text(config, "validation", log)
    eval_src_ids, eval_tgt_ids = records.TokenizedSplit(directory, "validation", manifest).read_all()
    if len(eval_src_ids) != len(eval_src):
        raise DataError(
            f"{directory}: validation has {len(eval_src_ids)} tokenized pairs, the text has "
            f"{len(eval_src)}; delete {directory} to preprocess again"
        )
    too_long = sum(len(s) > data.max_length or len(t) > data.max_length for s, t in zip(eval_src_ids, eval_tgt_ids))
    if too_long:
        log(
            f"warning: validation: {too_long} pair(s) longer than data.max_length = {data.max_length} are "
            f"truncated for the loss (decoding reads the full source up to model.max_len)"
        )
    evals = eval_batches(
        eval_src_ids,
        eval_tgt_ids,
        tokens_per_batch=data.eval_tokens or data.batch_tokens,
        max_length=data.max_length,
        row_multiple=jax.device_count(),
    )
    return Data(
        train=PrefetchedBatches(batches, buffer=data.prefetch_batches),
        eval_batches=evals,
        tokenizer=tokenizer,
        eval_sources=eval_src,
        eval_references=eval_tgt,
    )


def _workdir_vocabulary(directory, manifest, workdir, ids: SpecialIds) -> Tokenizer:
    """The tokenized directory's vocabulary, which is also the run's (<workdir>/spm.model, read by translate,
    export and the final stage): copied there on a first start, compared on a resume."""
    source = directory / manifest["vocabulary"]["file"]
    target = Workdir(workdir).vocabulary
    if jax.process_index() == 0:  # the only writer: the others read the tokenized directory's copy
        if not target.exists():
            workdir.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
        elif records.file_sha256(target) != manifest["vocabulary"]["sha256"]:
            raise ConfigError(
                f"{target} is not the vocabulary of {directory}: this run's checkpoints were "
                f"trained with another one; use a fresh workdir or the tokenized directory made "
                f"from it"
            )
    return Tokenizer.load(source, ids)


def _toy_data(config) -> Data:
    data = config.data
    task = data.dataset[len(TOY_PREFIX) :]
    if task not in toy.TASKS:
        raise ConfigError(f"data.dataset = {data.dataset!r}: toy tasks are {[TOY_PREFIX + t for t in toy.TASKS]}")
    kwargs = dict(
        batch_size=max(data.batch_tokens // data.max_length, 1),
        length=data.max_length,
        vocab=data.toy_vocab,
        min_len=data.toy_min_length,
        max_len=data.toy_max_length,
    )
    train = toy.ToyBatches(
        task, seed=config.train.seed, process_index=jax.process_index(), process_count=jax.process_count(), **kwargs
    )
    count = config.train.eval_batches or 8
    batches = [toy.toy_batch(task, i, seed=config.train.seed + EVAL_SEED_OFFSET, **kwargs) for i in range(count)]
    rows = kwargs["batch_size"]
    return Data(train=train, eval_batches=[(b, np.arange(i * rows, (i + 1) * rows)) for i, b in enumerate(batches)])
