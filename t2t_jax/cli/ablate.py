"""``python -m t2t_jax.ablate --rows A,B,E --steps N --workdir DIR [--base-config multi30k]
[--config.a.b=v ...]``: Table 3 at a budget you choose.

Every selected row (a letter picks all its rows; ``base`` is always included) is trained from the same
base config, seed, data and step budget, then scored on the dev split: perplexity per wordpiece and
sacreBLEU. A markdown table with the paper's own figures beside ours goes to DIR/table3.md (+ .json).
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib

from t2t_jax import configs
from t2t_jax.cli.common import command, quiet_libraries
from t2t_jax.config import load_config
from t2t_jax.errors import ConfigError


def select_rows(spec: str, rows: dict) -> list[str]:
    chosen = ["base"]
    for item in spec.split(","):
        matches = [r for r in rows if r == item or r.split("_")[0] == item]
        if not matches:
            raise ConfigError(f"--rows: {item!r} matches no Table 3 row; rows: {', '.join(rows)}")
        chosen += [m for m in matches if m not in chosen]
    return chosen


def row_overrides(row: str, rows: dict) -> list[str]:
    if rows[row] is None:
        raise ConfigError(f"row {row!r} is a whole model (configs/big.py), not a delta; leave it out")
    return [f"--config.{key}={value}" for key, value in rows[row].items()]


def run_row(row, base_config, overrides, steps, workdir, bleu_sentences, say, changes="-", position=""):
    """Train one row; its progress lines go to ``say`` prefixed with the row and ``position`` ("2/5")."""
    from t2t_jax.train.loop import train

    config = load_config(
        base_config,
        overrides
        + [
            f"--config.train.steps={steps}",
            f"--config.train.eval_every={steps}",
            f"--config.train.bleu_every={steps}",
            f"--config.train.bleu_sentences={bleu_sentences}",
            "--config.train.bleu_beam=1",
        ],
    )
    tag = f"[{row} {position}] " if position else f"[{row}] "
    summary = train(config, str(workdir), printer=lambda message, **kw: say(tag + str(message), **kw))
    final = summary["final_eval"]
    speeds = [h["tokens_per_s"] for h in summary["history"] if h["split"] == "train"][1:]  # skip compile
    result = {
        "row": row,
        "changes": changes,
        "params_m": summary["params"] / 1e6,
        "dev_ppl": math.exp(final["nll"]),
        "dev_bleu": final.get("bleu"),
        "tokens_per_s": sum(speeds) / len(speeds) if speeds else None,
    }
    say(f"{row}: {result}", flush=True)
    return result


def markdown(results, paper, command) -> str:
    lines = [
        f"Command: `{command}`",
        "",
        "| row | changes | params (M) | dev PPL | dev BLEU | tokens/s | paper PPL | paper BLEU | paper params |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        p_ppl, p_bleu, p_params = paper.get(r["row"], (None, None, None))
        fmt = lambda x, f: "-" if x is None else format(x, f)  # noqa: E731
        lines.append(
            f"| {r['row']} | {r['changes']} | {r['params_m']:.2f} | {r['dev_ppl']:.2f} | "
            f"{fmt(r['dev_bleu'], '.2f')} | {fmt(r['tokens_per_s'], ',.0f')} | {fmt(p_ppl, '.2f')} | "
            f"{fmt(p_bleu, '.1f')} | {fmt(p_params, 'd')} |"
        )
    return "\n".join(lines) + "\n"


@command
def main(argv=None):
    parser = argparse.ArgumentParser(prog="t2t-ablate", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", required=True, help="e.g. A,B,E or A_h1,E_learned")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--base-config", default="multi30k", help="a packaged config name or a config file")
    parser.add_argument("--bleu-sentences", type=int, default=200)
    args, rest = parser.parse_known_args(argv)
    quiet_libraries()
    table = vars(configs.module("table3"))
    base_overrides = [a for a in rest if a.startswith("--config.")]
    if len(base_overrides) != len(rest):
        parser.error(f"unrecognized arguments: {[a for a in rest if not a.startswith('--config.')]}")
    workdir = pathlib.Path(args.workdir)
    rows = select_rows(args.rows, table["ROWS"])
    results = []
    for number, row in enumerate(rows, 1):
        delta = row_overrides(row, table["ROWS"])
        changes = " ".join(o.removeprefix("--config.") for o in delta) or "-"
        results.append(
            run_row(
                row,
                args.base_config,
                base_overrides + delta,
                args.steps,
                workdir / row,
                args.bleu_sentences,
                print,
                changes,
                position=f"{number}/{len(rows)}",
            )
        )
    command_line = "python -m t2t_jax.ablate " + " ".join(argv)  # argv: the arguments (command() passes them)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "table3.md").write_text(markdown(results, table["PAPER"], command_line))
    (workdir / "table3.json").write_text(json.dumps(results, indent=2))
    print(f"wrote {workdir / 'table3.md'}")


if __name__ == "__main__":
    main()
