"""Whether a tokenized directory (data/records.py) may be used for a config: one error naming what differs.

A manifest is reused only when it was written for the same dataset, direction and vocabulary settings, from
the same source files (path, size, and modification time or, when that moved, the same sha256) or the same
tfds split, and its vocabulary file is the one it records.  Anything else would train silently on stale data.
"""

from __future__ import annotations

from t2t_jax.data import records
from t2t_jax.errors import DataError

KEY_FIELDS = {
    "dataset": "data.dataset",
    "source_lang": "data.source_lang",
    "target_lang": "data.target_lang",
    "vocab_size": "model.vocab_size",
    "spm_model_type": "data.spm_model_type",
}


def key(config) -> dict:
    """The config values a tokenized directory depends on (see KEY_FIELDS)."""
    data = config.data
    return {
        "dataset": data.dataset,
        "source_lang": data.source_lang,
        "target_lang": data.target_lang,
        "vocab_size": config.model.vocab_size,
        "spm_model_type": data.spm_model_type,
    }


def check(manifest: dict, config, directory, sources: dict | None = None) -> None:
    """Raise DataError when ``manifest`` does not fit ``config`` (and, if given, the current ``sources``)."""
    redo = f"; delete {directory} to preprocess again, or set data.tokenized_dir to another directory"
    if manifest.get("format") != records.FORMAT:
        raise DataError(f"{directory}: format {manifest.get('format')!r}, this version reads {records.FORMAT!r}{redo}")
    for field, value in key(config).items():
        old = manifest["key"].get(field)
        if old != value:
            raise DataError(
                f"{directory} was preprocessed with {KEY_FIELDS[field]} = {old!r}, the config says {value!r}{redo}"
            )
    vocabulary = directory / manifest["vocabulary"]["file"]
    if not vocabulary.exists() or records.file_sha256(vocabulary) != manifest["vocabulary"]["sha256"]:
        raise DataError(f"{vocabulary} is missing or is not the vocabulary the ids were made with{redo}")
    for split, now in (sources or {}).items():
        _check_source(split, manifest["sources"].get(split), now, directory, redo)


def _check_source(split, then, now, directory, redo) -> None:
    if then == now:
        return
    if then is None or ("files" in then) != ("files" in now):
        raise DataError(f"{directory}: split {split!r} was preprocessed from {then}, the config reads {now}{redo}")
    if "files" not in now:
        raise DataError(f"{now['tfds']} {split} has changed since {directory} was preprocessed ({then} -> {now}){redo}")
    for old, new in zip(then["files"], now["files"]):
        if old["path"] != new["path"]:
            raise DataError(
                f"{directory}: split {split!r} was preprocessed from {old['path']}, the config reads "
                f"{new['path']}{redo}"
            )
        if old["bytes"] != new["bytes"]:
            raise DataError(
                f"{new['path']} has changed since {directory} was preprocessed ({old['bytes']:,} -> "
                f"{new['bytes']:,} bytes){redo}"
            )
        if old["mtime_ns"] != new["mtime_ns"] and old.get("sha256") != records.file_sha256(new["path"]):
            # a new modification time alone (a copy, a checkout) is not a change when the bytes are the same
            raise DataError(f"{new['path']} has changed since {directory} was preprocessed (modified after it){redo}")
