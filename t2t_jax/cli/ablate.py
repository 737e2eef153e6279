"""``t2t-ablate --rows A,B,E --steps N --workdir DIR [--table multi30k|paper] [--base-seeds 2] [--config.a.b=v ...]``:
Table 3 at a budget you choose, resumable (the runner: t2t_jax/train/ablation.py)."""

from __future__ import annotations

import argparse
import json
import pathlib

from t2t_jax.cli.common import command, fail, quiet_libraries
from t2t_jax.huge_pages import relaunch_with_huge_pages


def build_parser():
    parser = argparse.ArgumentParser(prog="t2t-ablate", description="Table 3 at a budget you choose, resumable.")
    parser.add_argument("--rows", required=True, help="e.g. A,B,E or A_h1,E_learned or all")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--table", default="multi30k", choices=("multi30k", "paper"))
    parser.add_argument("--base-config", help="a packaged config name or a config file (default: the table's)")
    parser.add_argument("--base-seeds", type=int, default=2, help="the base row is trained with this many seeds")
    parser.add_argument("--bleu-sentences", type=int, default=0, help="dev sentences for BLEU (0 = all)")
    parser.add_argument(
        "--speeds", help="a bench/table3_speed.py JSON: the speed column shows its step times relative to the base"
    )
    return parser


def read_speeds(path) -> dict:
    """A bench/table3_speed.py report, or one error saying why it is not one."""
    try:
        data = json.loads(pathlib.Path(path).read_text())
    except (OSError, json.JSONDecodeError) as error:
        fail(f"--speeds {path}: {error}")
    if not isinstance(data, dict) or "base" not in data.get("rows", {}) or "machine" not in data:
        fail(f"--speeds {path}: not a bench/table3_speed.py report (it needs rows.base and machine)")
    return data


@command
def main(argv=None):
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    overrides = [a for a in rest if a.startswith("--config.")]
    if len(overrides) != len(rest):
        parser.error(f"unrecognized arguments: {[a for a in rest if not a.startswith('--config.')]}")
    if args.base_seeds < 1:
        parser.error("--base-seeds: at least 1")
    relaunch_with_huge_pages("t2t-ablate")
    quiet_libraries()
    from t2t_jax.train.ablation import run_ablation

    run_ablation(
        args.rows,
        args.steps,
        args.workdir,
        table=args.table,
        base_config=args.base_config,
        base_seeds=args.base_seeds,
        bleu_sentences=args.bleu_sentences,
        overrides=overrides,
        command_line="python -m t2t_jax ablate " + " ".join(argv),  # argv: the arguments (command() passes them)
        speeds=read_speeds(args.speeds) if args.speeds else None,
    )
