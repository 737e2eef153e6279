"""``python -m t2t_jax average --workdir DIR --last N [--until STEP] [--out DIR/averaged]``."""

from __future__ import annotations

import argparse

from t2t_jax.cli.common import command, quiet_libraries
from t2t_jax.workdir import Workdir


@command
def main(argv=None):
    parser = argparse.ArgumentParser(prog="t2t-average", description="Average the params of the last N checkpoints.")
    parser.add_argument("--workdir", required=True)
    parser.add_argument(
        "--last", type=int, default=5, help="how many of the newest checkpoints (paper: 5 base, 20 big)"
    )
    parser.add_argument("--until", type=int, help="only checkpoints at or before this step (budget studies)")
    parser.add_argument("--out", help="output directory (default: WORKDIR/averaged, used by --checkpoint averaged)")
    args = parser.parse_args(argv)
    quiet_libraries()
    from t2t_jax.checkpoint.average import average_last

    out = args.out or str(Workdir(args.workdir).averaged)
    steps = average_last(args.workdir, args.last, out, until=args.until)
    print(f"averaged steps {steps} -> {out}")
