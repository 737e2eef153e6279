"""Flat parameter files: names exactly as in the model tree (``encoder/layer_0/self_attn/query/kernel``).

``safetensors`` or ``npz`` plus ``config.json`` (the model config) and ``spm.model`` (the
tokenizer) side by side. The names are the stable export keys documented in docs/design.md.
"""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
from flax.traverse_util import flatten_dict, unflatten_dict

from t2t_jax.workdir import Workdir


def flatten(params) -> dict[str, np.ndarray]:
    return {name: np.asarray(value, np.float32) for name, value in flatten_dict(params, sep="/").items()}


def unflatten(flat: dict) -> dict:
    return unflatten_dict({tuple(name.split("/")): np.asarray(value) for name, value in flat.items()})


def save_flat(params, model_config: dict, out_dir, fmt: str, spm_path=None) -> pathlib.Path:
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    flat = flatten(params)
    if fmt == "safetensors":
        from safetensors.numpy import save_file

        path = out_dir / "params.safetensors"
        save_file(flat, str(path))
    elif fmt == "npz":
        path = out_dir / "params.npz"
        np.savez(path, **flat)
    else:
        raise ValueError(f"unknown flat format {fmt!r}")
    (out_dir / Workdir.CONFIG).write_text(json.dumps({"model": model_config}, indent=2))
    if spm_path is not None and pathlib.Path(spm_path).exists():
        shutil.copy(spm_path, out_dir / Workdir.VOCABULARY)
    return path


def load_flat(path) -> dict:
    path = pathlib.Path(path)
    if path.suffix == ".safetensors":
        from safetensors.numpy import load_file

        return unflatten(load_file(str(path)))
    with np.load(path) as data:
        return unflatten({k: data[k] for k in data.files})
