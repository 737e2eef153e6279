"""``python -m t2t_jax.export --workdir DIR [--checkpoint ...] --format safetensors|npz|hf-marian|torch --out OUT``."""
from __future__ import annotations

import argparse
import pathlib

from t2t_jax.cli.common import fail, quiet_libraries
from t2t_jax.model.config import ConfigError

FORMATS = ("safetensors", "npz", "hf-marian", "torch")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="t2t-export", description="Export trained params to other frameworks.")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--checkpoint", default="latest", help="latest, best, averaged or a step number")
    parser.add_argument("--format", required=True, choices=FORMATS)
    parser.add_argument("--out", required=True, help="output directory")
    args = parser.parse_args(argv)
    quiet_libraries()
    import json

    from t2t_jax.checkpoint.params import load_params
    from t2t_jax.export.marian import ExportError, export_marian
    from t2t_jax.export.flat import save_flat
    from t2t_jax.export.torch_export import export_torch
    from t2t_jax.model.config import ModelConfig

    workdir = pathlib.Path(args.workdir)
    try:
        config = json.loads((workdir / "config.json").read_text())
        cfg = ModelConfig.from_mapping(config["model"])
        if args.format == "hf-marian":
            from t2t_jax.export.marian import check_exportable

            check_exportable(cfg)  # refuse before reading any checkpoint
        step, params = load_params(workdir, args.checkpoint)
        spm = workdir / "spm.model"
        spm = spm if spm.exists() else None
        if args.format in ("safetensors", "npz"):
            path = save_flat(params, cfg.to_dict(), args.out, args.format, spm)
        elif args.format == "hf-marian":
            path = export_marian(params, cfg, args.out, spm)
        else:
            path = export_torch(params, cfg, args.out, spm)
    except (ConfigError, ExportError, FileNotFoundError) as error:
        fail(str(error))
    print(f"exported step {step} ({args.checkpoint}) as {args.format} -> {path}")


if __name__ == "__main__":
    main()
