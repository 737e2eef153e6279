"""Export a trained workdir's checkpoint in one of FORMATS: the dispatch behind ``t2t-export`` (and for Python)."""

from __future__ import annotations

import json
import pathlib
import shutil

from t2t_jax.workdir import Workdir

FORMATS = ("safetensors", "npz", "hf-marian", "torch", "ctranslate2")


def export_workdir(workdir, fmt: str, out, *, checkpoint: str = "latest", overwrite: bool = False):
    """(step, path of the export's main file or folder). Refuses, before reading any checkpoint, a format that
    cannot express the model (export/support.py) and an output folder that is not new, empty or a previous
    export of the same format (export/output.py); a failed export leaves ``out`` as it was."""
    from t2t_jax.checkpoint.params import load_params
    from t2t_jax.export.ctranslate2 import export_ctranslate2
    from t2t_jax.export.flat import save_flat
    from t2t_jax.export.marian import export_marian
    from t2t_jax.export.output import check_output_dir, finish_output, staging_dir
    from t2t_jax.export.support import check_exportable
    from t2t_jax.export.torch_export import export_torch
    from t2t_jax.model.config import ModelConfig

    workdir = pathlib.Path(workdir)
    files = Workdir(workdir)
    cfg = ModelConfig.from_mapping(json.loads(files.config.read_text())["model"])
    check_exportable(cfg, fmt)  # refuse before reading any checkpoint
    out = check_output_dir(out, kind=fmt, workdir=workdir, overwrite=overwrite)
    step, params = load_params(workdir, checkpoint)
    spm = files.vocabulary if files.vocabulary.exists() else None
    writers = {
        "safetensors": lambda staged: save_flat(params, cfg.to_dict(), staged, "safetensors", spm),
        "npz": lambda staged: save_flat(params, cfg.to_dict(), staged, "npz", spm),
        "hf-marian": lambda staged: export_marian(params, cfg, staged, spm),
        "ctranslate2": lambda staged: export_ctranslate2(params, cfg, staged, spm),
        "torch": lambda staged: export_torch(params, cfg, staged, spm),
    }
    staged = staging_dir(out)
    try:
        path = writers[fmt](staged)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)  # ours alone: a fresh temporary directory
        raise
    finish_output(staged, out, fmt)
    return step, out / path.relative_to(staged)
