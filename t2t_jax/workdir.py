"""A run's workdir: every file and folder it holds is named once, here (``Workdir``), as ``etils.epath`` paths,
so ``gs://bucket/run`` (or any URL epath and orbax know) stays a URL end to end.

``pathlib.Path("gs://b/run")`` silently becomes the local folder ``gs:/b/run``; every module that touches a
workdir takes its paths from ``Workdir`` / ``workdir_path`` instead.
"""

from __future__ import annotations

import os

from etils import epath

URL_SCHEMES = ("gs://", "s3://", "az://", "hf://")


def is_url(path) -> bool:
    return str(path).startswith(URL_SCHEMES)


def workdir_path(path) -> epath.Path:
    """``path`` as an epath.Path; a local one made absolute (tensorstore needs absolute paths)."""
    if isinstance(path, epath.Path) and is_url(path):
        return path
    text = os.fspath(path)
    return epath.Path(text if is_url(text) else os.path.abspath(text))


class Workdir:
    """The files and folders of a run under ``root``. The names are also the layout of a params export
    (``CONFIG`` + ``VOCABULARY``) and of an imported Marian model, so every reader finds them."""

    CONFIG = "config.json"  # the run config; its "model" section rebuilds the ModelConfig
    VOCABULARY = "spm.model"  # the shared sentencepiece model
    CHECKPOINTS = "checkpoints"  # orbax, the latest ``checkpoint.keep`` steps
    BEST = "best"  # orbax, the best dev-BLEU checkpoint
    AVERAGED = "averaged"  # params averaged over the last ``final.average_last`` checkpoints
    HISTORY = "history.jsonl"  # one JSON line per log/eval step
    SUMMARY = "summary.json"  # the last training summary
    FINAL = "final.json"  # the final stage's reports
    EVAL = "eval"  # <split>.<checkpoint>.{hyp,json,md}
    CURVES = "curves.png"
    TENSORBOARD = "tensorboard"
    ATTENTION = "attention"  # t2t-visualize's PNGs
    TOKENIZED = "tokenized"  # the preprocessed corpus when data.tokenized_dir is unset (local workdirs)
    JAX_CACHE = "jax_cache"  # JAX's persistent compilation cache of the inference commands

    def __init__(self, path):
        self.root = workdir_path(path)

    def __truediv__(self, name: str) -> epath.Path:
        return self.root / name

    def __repr__(self) -> str:
        return f"Workdir({str(self.root)!r})"

    config = property(lambda self: self.root / self.CONFIG)
    vocabulary = property(lambda self: self.root / self.VOCABULARY)
    checkpoints = property(lambda self: self.root / self.CHECKPOINTS)
    best = property(lambda self: self.root / self.BEST)
    averaged = property(lambda self: self.root / self.AVERAGED)
    history = property(lambda self: self.root / self.HISTORY)
    summary = property(lambda self: self.root / self.SUMMARY)
    final = property(lambda self: self.root / self.FINAL)
    eval = property(lambda self: self.root / self.EVAL)
    curves = property(lambda self: self.root / self.CURVES)
    tensorboard = property(lambda self: self.root / self.TENSORBOARD)
    attention = property(lambda self: self.root / self.ATTENTION)
    tokenized = property(lambda self: self.root / self.TOKENIZED)
    jax_cache = property(lambda self: self.root / self.JAX_CACHE)


def file_in_the_way(path):
    """The first folder above ``path`` that exists but is a file (a directory cannot be made there), or None."""
    return next((parent for parent in path.parents if parent.exists() and not parent.is_dir()), None)


def check_workdir(path: epath.Path) -> None:
    """A workdir must be a folder this process can write (checked before any work)."""
    from t2t_jax.errors import ConfigError

    if path.exists() and not path.is_dir():
        raise ConfigError(f"--workdir {path} is a file, not a directory")
    blocking = None if is_url(path) else file_in_the_way(path)
    if blocking is not None:
        raise ConfigError(f"--workdir {path}: {blocking} is a file, not a directory")
    if not is_url(path) and path.exists() and not os.access(os.fspath(path), os.W_OK):
        raise ConfigError(f"--workdir {path} is not writable")
