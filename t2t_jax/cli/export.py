"""``t2t-export --workdir DIR [--checkpoint ...] --format FORMAT --out OUT`` (FORMATS below)."""

from __future__ import annotations

import argparse
import pathlib
import shutil

from t2t_jax.cli.common import command, quiet_libraries
from t2t_jax.workdir import Workdir

FORMATS = ("safetensors", "npz", "hf-marian", "torch", "ctranslate2")


@command
def main(argv=None):
    parser = argparse.ArgumentParser(prog="t2t-export", description="Export trained params to other frameworks.")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--checkpoint", default="latest", help="latest, best, averaged or a step number")
    parser.add_argument("--format", required=True, choices=FORMATS)
    parser.add_argument(
        "--out",
        required=True,
        help="output directory: new, empty, or a previous export of the same format (never the workdir)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="write into a non-empty directory (replaces only files of the export's own names)",
    )
    args = parser.parse_args(argv)
    quiet_libraries()
    import json

    from t2t_jax.checkpoint.params import load_params
    from t2t_jax.export.ctranslate2 import export_ctranslate2
    from t2t_jax.export.flat import save_flat
    from t2t_jax.export.marian import export_marian
    from t2t_jax.export.output import check_output_dir, finish_output, staging_dir
    from t2t_jax.export.support import check_exportable
    from t2t_jax.export.torch_export import export_torch
    from t2t_jax.model.config import ModelConfig

    workdir = pathlib.Path(args.workdir)
    config = json.loads(Workdir(workdir).config.read_text())
    cfg = ModelConfig.from_mapping(config["model"])
    check_exportable(cfg, args.format)  # refuse before reading any checkpoint
    out = check_output_dir(args.out, kind=args.format, workdir=workdir, overwrite=args.overwrite)
    step, params = load_params(workdir, args.checkpoint)
    spm = Workdir(workdir).vocabulary
    spm = spm if spm.exists() else None
    staged = staging_dir(out)
    try:
        if args.format in ("safetensors", "npz"):
            path = save_flat(params, cfg.to_dict(), staged, args.format, spm)
        elif args.format == "hf-marian":
            path = export_marian(params, cfg, staged, spm)
        elif args.format == "ctranslate2":
            path = export_ctranslate2(params, cfg, staged, spm)
        else:
            path = export_torch(params, cfg, staged, spm)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)  # ours alone: a fresh temporary directory
        raise
    finish_output(staged, out, args.format)
    path = out / path.relative_to(staged)
    print(f"exported step {step} ({args.checkpoint}) as {args.format} -> {path}")
