"""Workdir paths: ``etils.epath`` everywhere, so ``gs://bucket/run`` (or any URL epath and orbax know) stays a
URL end to end — checkpoints, config.json, spm.model, history, events, curves, eval reports, averaged/.

``pathlib.Path("gs://b/run")`` silently becomes the local folder ``gs:/b/run``; every module that touches a
workdir takes its paths from ``workdir_path`` instead.
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


def check_workdir(path: epath.Path) -> None:
    """A workdir must be a folder this process can write (checked before any work)."""
    from t2t_jax.model.config import ConfigError

    if path.exists() and not path.is_dir():
        raise ConfigError(f"--workdir {path} is a file, not a directory")
    if not is_url(path) and path.exists() and not os.access(os.fspath(path), os.W_OK):
        raise ConfigError(f"--workdir {path} is not writable")


def append_text(path: epath.Path, text: str) -> None:
    """Append to a file (object stores have no append: read, extend, write the whole file)."""
    existing = path.read_text() if path.exists() else ""
    path.write_text(existing + text)
