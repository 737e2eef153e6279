"""``t2t-export --workdir DIR [--checkpoint ...] --format FORMAT --out OUT`` (export/workdir.py FORMATS)."""

from __future__ import annotations

import argparse

from t2t_jax.cli.common import command, quiet_libraries
from t2t_jax.export.workdir import FORMATS


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
    from t2t_jax.export.workdir import export_workdir

    step, path = export_workdir(
        args.workdir, args.format, args.out, checkpoint=args.checkpoint, overwrite=args.overwrite
    )
    print(f"exported step {step} ({args.checkpoint}) as {args.format} -> {path}")
