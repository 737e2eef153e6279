"""Every Table 3 row's training step, timed side by side in one run on one machine: the rows' speeds compared
with each other, not the machines their rows were trained on. Prints JSON.

    T2T_DATA_DIR=../shared/data python bench/table3_speed.py [--rows base,C_n6] [--steps 3] \
        > bench/results/table3_speed_multi30k.json

Each row (``table3:multi30k/ROW``) trains ``--steps`` timed steps after ``--warmup`` (compiling) steps, all on
the same real packed batch of the base config (Multi30k, 64 rows of 64 tokens a side), with its own model,
optimizer, dropout and label smoothing. ``relative_step_time``: the row's seconds per step over the base's.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import jax  # noqa: E402

from bench.machine import recorded  # noqa: E402
from t2t_jax import config as configs  # noqa: E402
from t2t_jax.config import model_config  # noqa: E402
from t2t_jax.config.presets.table3 import MULTI30K_ROWS  # noqa: E402
from t2t_jax.data.inputs import make_data  # noqa: E402
from t2t_jax.model import Transformer  # noqa: E402
from t2t_jax.train.state import create_state, make_optimizer, param_count  # noqa: E402
from t2t_jax.train.step import jit_train_step  # noqa: E402


def one_batch() -> dict:
    """A real packed training batch of the base row (the rows share the data config)."""
    with tempfile.TemporaryDirectory() as workdir:
        data = make_data(configs.get("table3:multi30k/base"), pathlib.Path(workdir), log=lambda *_: None)
        batch = next(data.train)
        if hasattr(data.train, "close"):
            data.train.close()  # no prefetch thread packing batches beside the timings
    return jax.tree_util.tree_map(lambda x: x, batch)


def time_row(row: str, batch: dict, steps: int, warmup: int) -> dict:
    config = configs.get(f"table3:multi30k/{row}")
    cfg = model_config(config)
    tx, _ = make_optimizer(config.optimizer, cfg, config.train.steps)
    state = create_state(cfg, tx, config.train.seed)
    step = jit_train_step(Transformer(cfg), tx, config.train.label_smoothing)
    placed = jax.device_put(batch)
    params = param_count(state.params)
    began = time.perf_counter()
    for _ in range(warmup):
        state, sums = step(state, placed)
    jax.block_until_ready(sums)
    compile_seconds = time.perf_counter() - began
    began = time.perf_counter()
    for _ in range(steps):
        state, sums = step(state, placed)
    jax.block_until_ready(sums)
    seconds = (time.perf_counter() - began) / steps
    tokens = float(sums["tokens"]) if "tokens" in sums else float((batch["targets"] != 0).sum())
    return {
        "params_m": round(params / 1e6, 3),
        "dtype": cfg.dtype,
        "seconds_per_step": round(seconds, 3),
        "target_tokens_per_s": round(tokens / seconds, 1),
        "warmup_seconds": round(compile_seconds, 1),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="all", help="comma-separated rows (base is always timed), or all")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    rows = list(MULTI30K_ROWS) if args.rows == "all" else ["base", *[r for r in args.rows.split(",") if r != "base"]]
    batch = one_batch()
    report = {"batch_shape": list(batch["targets"].shape), "steps": args.steps, "warmup": args.warmup, "rows": {}}
    time_row("base", batch, 1, 1)  # not recorded: the first program of a process runs slower
    for row in rows:
        report["rows"][row] = time_row(row, batch, args.steps, args.warmup)
        print(row, json.dumps(report["rows"][row]), file=sys.stderr, flush=True)
    again = time_row("base", batch, args.steps, args.warmup)["seconds_per_step"]  # the machine's drift over the run
    report["base_seconds_per_step_at_the_end"] = again
    base = report["rows"]["base"]["seconds_per_step"]
    for entry in report["rows"].values():
        entry["relative_step_time"] = round(entry["seconds_per_step"] / base, 2)
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
