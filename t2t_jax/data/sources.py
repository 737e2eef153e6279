"""Dataset selection by ``config.data.dataset``: where a split's text comes from, streamed or as lists.

Datasets:
  toy_copy, toy_reverse      generated tasks (data/toy.py)
  multi30k                   <data_dir>/multi30k/{train,val,test_2016_flickr}.{lang}
  parallel_text              any line-aligned files: data.{train,validation,test}_prefix + ".{lang}"
  wmt14_translate/de-en|fr-en  tensorflow-datasets (data/tfds_source.py), prepared beforehand
``data_dir`` comes from data.data_dir or the T2T_DATA_DIR environment variable.  The training input reads
token ids written once by data/preprocess.py (data/inputs.py assembles it); the text here is read by the
preprocessing (streamed) and, for the small evaluation splits, by decoding and BLEU.
"""

from __future__ import annotations

import os
import pathlib

from t2t_jax.data import toy
from t2t_jax.data.text import iter_parallel, read_parallel
from t2t_jax.errors import ConfigError, DataError

TOY_PREFIX = "toy_"
SPLITS = ("train", "validation", "test")
MULTI30K_FILES = {"train": "train", "validation": "val", "test": "test_2016_flickr"}
TFDS_NAMES = ("wmt14_translate/de-en", "wmt14_translate/fr-en")
FETCH_COMMAND = "python -m t2t_jax fetch multi30k"  # data/fetch.py
AUTO_FETCH_TIMEOUT_SECONDS = 20  # per file: an unreachable host fails fast, a slow link still gets its 6 MB


def data_dir(config) -> pathlib.Path:
    """data.data_dir, else $T2T_DATA_DIR, else a cache folder (where the train command fetches Multi30k)."""
    path = config.data.data_dir or os.environ.get("T2T_DATA_DIR", "")
    return pathlib.Path(path) if path else default_data_dir()


def default_data_dir() -> pathlib.Path:
    """$XDG_CACHE_HOME/t2t_jax/data (~/.cache/t2t_jax/data)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(cache) / "t2t_jax" / "data"


def ensure_multi30k(config, splits, log=print) -> None:
    """Fetch and verify Multi30k into the data directory when a file of ``splits`` is missing, so that the main
    job is one command; offline, one error that says what to download and where to put it. The source is
    $T2T_MULTI30K_URL when set (a mirror: URL or folder), else the Multi30k repository at a fixed commit.
    Present files (a slice or a copy of your own) are used as they are."""
    from t2t_jax.data.fetch import MULTI30K_URL, fetch_multi30k

    if all(path.is_file() for split in splits for path in multi30k_files(config, split)):
        return
    folder = data_dir(config)
    source = os.environ.get("T2T_MULTI30K_URL") or MULTI30K_URL
    log(f"Multi30k is not in {folder / 'multi30k'}: fetching it from {source} (9 files, 6.4 MB, sha256-verified)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fetch_multi30k(str(folder), source, log=log, timeout=AUTO_FETCH_TIMEOUT_SECONDS)
    except (DataError, OSError) as error:
        raise DataError(
            f"Multi30k is not in {folder / 'multi30k'} and fetching it failed: {error}. Download the nine files "
            f"<split>.<lang>.gz (train, val, test_2016_flickr; en, de, fr) from {MULTI30K_URL} into a folder F, "
            f"then run `{FETCH_COMMAND} --to {folder} --from F` (or set T2T_DATA_DIR to a folder holding multi30k/)"
        ) from None


def multi30k_prefix(config, split: str) -> pathlib.Path:
    """<data_dir>/multi30k/<file stem of split>: the split's files add the language as their suffix."""
    return data_dir(config) / "multi30k" / MULTI30K_FILES[split]


def multi30k_files(config, split: str) -> tuple[pathlib.Path, pathlib.Path]:
    """(source file, target file) of a Multi30k split in the configured direction."""
    prefix = multi30k_prefix(config, split)
    return pathlib.Path(f"{prefix}.{config.data.source_lang}"), pathlib.Path(f"{prefix}.{config.data.target_lang}")


def split_text(config, split: str, log=print):
    """(source lines, target lines) of ``split`` in the configured direction."""
    data = config.data
    if data.dataset in TFDS_NAMES:
        from t2t_jax.data.tfds_source import tfds_split

        return tfds_split(data.dataset, split, data.source_lang, data.target_lang, data.tfds_data_dir or None)
    source_file, target_file = split_files(config, split)
    return read_parallel(source_file, target_file, training=split == "train", log=log)


def stream_pairs(config, split: str, skipped: list | None = None, repairs: dict | None = None):
    """(source, target) text pairs of ``split``, streamed in corpus order (training drops empty sides,
    appending where to ``skipped``; text files' repairs counted in ``repairs``, data/text.py)."""
    data = config.data
    if data.dataset in TFDS_NAMES:
        from t2t_jax.data.tfds_source import iter_tfds_pairs

        return iter_tfds_pairs(
            data.dataset, split, data.source_lang, data.target_lang, data.tfds_data_dir or None, skipped=skipped
        )
    source_file, target_file = split_files(config, split)
    return iter_parallel(source_file, target_file, training=split == "train", skipped=skipped, repairs=repairs)


def describe_split(config, split: str) -> dict:
    """What a tokenized directory's manifest records of a split's origin, to notice when it changes."""
    data = config.data
    if data.dataset in TFDS_NAMES:
        from t2t_jax.data.tfds_source import describe

        return describe(data.dataset, split, data.source_lang, data.target_lang, data.tfds_data_dir or None)
    files = []
    for file in split_files(config, split):
        stat = file.stat()
        files.append({"path": str(file.resolve()), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    return {"files": files}


def check_splits(config, splits, log=print) -> None:
    """Every local split a run will read exists (checked before training, not after it); Multi30k is fetched
    when it is missing."""
    if config.data.dataset in TFDS_NAMES or config.data.dataset.startswith(TOY_PREFIX):
        return
    if config.data.dataset == "multi30k":
        ensure_multi30k(config, splits, log)
    for split in splits:
        split_files(config, split)


def split_files(config, split: str):
    """(source file, target file) of a local split; a clear error when one is missing."""
    data = config.data
    src, tgt = data.source_lang, data.target_lang
    if data.dataset == "multi30k":
        prefix = multi30k_prefix(config, split)
    elif data.dataset == "parallel_text":
        prefix = getattr(data, f"{split}_prefix")
        if not prefix:
            raise ConfigError(
                f"data.{split}_prefix is empty: give the path of the {split} files without the .{src}/.{tgt} suffix"
            )
    elif data.dataset.startswith(TOY_PREFIX):
        raise ConfigError(
            f"data.dataset = {data.dataset!r} is generated in memory: it has no {split} files to read (evaluate "
            f"or preprocess a text corpus: multi30k, parallel_text or {' / '.join(TFDS_NAMES)})"
        )
    else:
        raise ConfigError(
            f"data.dataset = {data.dataset!r}; known: multi30k, parallel_text, "
            f"{', '.join(TFDS_NAMES)}, {', '.join(TOY_PREFIX + t for t in toy.TASKS)}"
        )
    source_file, target_file = pathlib.Path(f"{prefix}.{src}"), pathlib.Path(f"{prefix}.{tgt}")
    for file in (source_file, target_file):
        if not file.exists():
            hint = f"; run `{FETCH_COMMAND} --to {data_dir(config)}`" if data.dataset == "multi30k" else ""
            raise DataError(f"{file}: missing file for split {split!r} of {data.dataset}{hint}")
    return source_file, target_file
