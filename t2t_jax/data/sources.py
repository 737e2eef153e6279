"""Dataset selection by ``config.data.dataset``: raw text splits, tokenizer, train/eval batches.

Datasets:
  toy_copy, toy_reverse      generated tasks (data/toy.py)
  multi30k                   <data_dir>/multi30k/{train,val,test_2016_flickr}.{lang}
  parallel_text              any line-aligned files: data.{train,validation,test}_prefix + ".{lang}"
  wmt14_translate/de-en|fr-en  tensorflow-datasets (data/tfds_source.py), prepared beforehand
``data_dir`` comes from data.data_dir or the T2T_DATA_DIR environment variable.
"""
from __future__ import annotations

import dataclasses
import os
import pathlib
from typing import Callable, Optional

import jax
import numpy as np

from t2t_jax.data import toy
from t2t_jax.data.pipeline import PackedTrainBatches, eval_batches
from t2t_jax.data.text import DataError, read_parallel
from t2t_jax.data.tokenizer import Tokenizer, load_or_train
from t2t_jax.model.config import ConfigError
from t2t_jax.train import distributed
from t2t_jax.workdir import workdir_path

TOY_PREFIX = "toy_"
EVAL_SEED_OFFSET = 10_007  # evaluation batches come from a different stream than training
SPLITS = ("train", "validation", "test")
MULTI30K_FILES = {"train": "train", "validation": "val", "test": "test_2016_flickr"}
TFDS_NAMES = ("wmt14_translate/de-en", "wmt14_translate/fr-en")
FETCH_COMMAND = "python -m t2t_jax.data.fetch multi30k"  # data/fetch.py
TOKENIZER_BARRIER_SECONDS = 3 * 3600  # sentencepiece on a 2M-sentence sample takes tens of minutes


@dataclasses.dataclass
class Data:
    train: object  # iterator of local (per-process) batches with get_state / set_state
    eval_batches: list  # [(global batch, example indices)]
    tokenizer: Optional[Tokenizer] = None
    eval_sources: Optional[list] = None  # raw validation text, for decoding and BLEU
    eval_references: Optional[list] = None


def data_dir(config) -> pathlib.Path:
    path = config.data.data_dir or os.environ.get("T2T_DATA_DIR", "")
    if not path:
        raise ConfigError(f"no data directory: set data.data_dir or the T2T_DATA_DIR environment variable; to "
                          f"get Multi30k run `{FETCH_COMMAND} --to DIR`, then T2T_DATA_DIR=DIR")
    if not pathlib.Path(path).is_dir():
        raise ConfigError(f"data directory {path} does not exist (data.data_dir / T2T_DATA_DIR); to get "
                          f"Multi30k there run `{FETCH_COMMAND} --to {path}`")
    return pathlib.Path(path)


def split_text(config, split: str, log=print):
    """(source lines, target lines) of ``split`` in the configured direction."""
    data = config.data
    if data.dataset in TFDS_NAMES:
        from t2t_jax.data.tfds_source import tfds_split

        return tfds_split(data.dataset, split, data.source_lang, data.target_lang, data.tfds_data_dir or None)
    source_file, target_file = split_files(config, split)
    return read_parallel(source_file, target_file, training=split == "train", log=log)


def check_splits(config, splits) -> None:
    """Every local split a run will read exists (checked before training, not after it)."""
    if config.data.dataset in TFDS_NAMES or config.data.dataset.startswith(TOY_PREFIX):
        return
    for split in splits:
        split_files(config, split)


def split_files(config, split: str):
    """(source file, target file) of a local split; a clear error when one is missing."""
    data = config.data
    src, tgt = data.source_lang, data.target_lang
    if data.dataset == "multi30k":
        prefix = data_dir(config) / "multi30k" / MULTI30K_FILES[split]
    elif data.dataset == "parallel_text":
        prefix = getattr(data, f"{split}_prefix")
        if not prefix:
            raise ConfigError(f"data.{split}_prefix is empty: give the path of the {split} files without "
                              f"the .{src}/.{tgt} suffix")
    else:
        raise ConfigError(f"data.dataset = {data.dataset!r}; known: multi30k, parallel_text, "
                          f"{', '.join(TFDS_NAMES)}, {', '.join(TOY_PREFIX + t for t in toy.TASKS)}")
    source_file, target_file = pathlib.Path(f"{prefix}.{src}"), pathlib.Path(f"{prefix}.{tgt}")
    for file in (source_file, target_file):
        if not file.exists():
            hint = f"; run `{FETCH_COMMAND} --to {data_dir(config)}`" if data.dataset == "multi30k" else ""
            raise DataError(f"{file}: missing file for split {split!r} of {data.dataset}{hint}")
    return source_file, target_file


def make_data(config, workdir=None, log: Callable = print) -> Data:
    if config.data.dataset.startswith(TOY_PREFIX):
        return _toy_data(config)
    return _text_data(config, workdir, log)


def _toy_data(config) -> Data:
    data = config.data
    task = data.dataset[len(TOY_PREFIX):]
    if task not in toy.TASKS:
        raise ConfigError(f"data.dataset = {data.dataset!r}: toy tasks are {[TOY_PREFIX + t for t in toy.TASKS]}")
    kwargs = dict(batch_size=max(data.batch_tokens // data.max_length, 1), length=data.max_length,
                  vocab=data.toy_vocab, min_len=data.toy_min_length, max_len=data.toy_max_length)
    train = toy.ToyBatches(task, seed=config.train.seed, process_index=jax.process_index(),
                           process_count=jax.process_count(), **kwargs)
    count = config.train.eval_batches or 8
    batches = [toy.toy_batch(task, i, seed=config.train.seed + EVAL_SEED_OFFSET, **kwargs) for i in range(count)]
    rows = kwargs["batch_size"]
    return Data(train=train, eval_batches=[(b, np.arange(i * rows, (i + 1) * rows)) for i, b in enumerate(batches)])


def _text_data(config, workdir, log) -> Data:
    data = config.data
    train_src, train_tgt = split_text(config, "train", log)
    spm_path = workdir_path(workdir or ".") / "spm.model"
    # One vocabulary for all processes: process 0 learns it, the others wait for it and read the file.
    if jax.process_index() == 0:
        tokenizer = load_or_train(spm_path, lambda: train_src + train_tgt, vocab_size=config.model.vocab_size,
                                  model_type=data.spm_model_type, max_sentences=data.spm_max_sentences,
                                  seed=config.train.seed)
    distributed.barrier("t2t_tokenizer", timeout_seconds=TOKENIZER_BARRIER_SECONDS)
    if jax.process_index() != 0:
        tokenizer = Tokenizer.load(spm_path)
    if tokenizer.vocab_size != config.model.vocab_size:
        raise ConfigError(f"{spm_path} has {tokenizer.vocab_size} pieces but model.vocab_size = "
                          f"{config.model.vocab_size}; use a fresh workdir or the matching vocab size")
    src_ids, tgt_ids = tokenizer.encode_batch(train_src), tokenizer.encode_batch(train_tgt)
    keep = [i for i in range(len(src_ids)) if len(src_ids[i]) <= data.max_length and len(tgt_ids[i]) <= data.max_length]
    if not keep:
        raise DataError(f"train: all {len(src_ids)} pairs are longer than data.max_length = {data.max_length} "
                        f"tokens on a side; raise data.max_length")
    if len(keep) < len(src_ids):
        log(f"train: filtered {len(src_ids) - len(keep)} of {len(src_ids)} pairs longer than "
            f"data.max_length = {data.max_length}")
    rows = max(data.batch_tokens // data.max_length // jax.process_count(), 1)
    train = PackedTrainBatches([src_ids[i] for i in keep], [tgt_ids[i] for i in keep], rows=rows,
                               length=data.max_length, seed=config.train.seed, process_index=jax.process_index(),
                               process_count=jax.process_count())
    eval_src, eval_tgt = split_text(config, "validation", log)
    eval_src_ids, eval_tgt_ids = tokenizer.encode_batch(eval_src), tokenizer.encode_batch(eval_tgt)
    too_long = sum(len(s) > data.max_length or len(t) > data.max_length for s, t in zip(eval_src_ids, eval_tgt_ids))
    if too_long:
        log(f"warning: validation: {too_long} pair(s) longer than data.max_length = {data.max_length} are "
            f"truncated for the loss (decoding reads the full source up to model.max_len)")
    batches = eval_batches(eval_src_ids, eval_tgt_ids, tokens_per_batch=data.eval_tokens or data.batch_tokens,
                           max_length=data.max_length, row_multiple=jax.device_count())
    return Data(train=train, eval_batches=batches, tokenizer=tokenizer, eval_sources=eval_src,
                eval_references=eval_tgt)
