"""Do two checkouts compile the decoder and the train step to the same programs? Prints JSON.

    git clone --quiet . /tmp/before && git -C /tmp/before checkout <rev>
    python bench/same_programs.py /tmp/before .      # before, after

For a refactor that must not change speed, a timing A/B on a shared 2-core machine is noisy (±20 % between
runs here); identical lowered programs are a proof. Each checkout lowers, in its own interpreter, the
tiny model's cached greedy and beam-4 decoders (batch 64) and its train step, in float32 and bfloat16, to
StableHLO; the report counts, per program, the ops of each and the ops (SSA names abstracted away) found in
one but not the other. 0 differing ops = the same computation, up to op and loop-carry order (a carry
list is compared as a set).
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.machine import recorded  # noqa: E402

LOWER = r"""
import pathlib, sys
sys.path.insert(0, ".")
import numpy as np
from bench.train_step import SIZES, model_config
from t2t_jax.config import default_config
from t2t_jax.decode.decoder import translate_ids
from t2t_jax.model import Transformer
from t2t_jax.train.state import create_state, init_params, make_optimizer
from t2t_jax.train.step import jit_train_step

out = pathlib.Path(sys.argv[1])
# greedy was spelled beam 0 before the attention registry
greedy = 0 if "beam=0" in open("bench/decode.py").read() else 1
for dtype in ("float32", "bfloat16"):
    cfg = model_config(SIZES["tiny"], dtype)
    params = init_params(cfg, seed=0)
    src = np.random.default_rng(0).integers(3, cfg.vocab_size, (64, 20)).astype(np.int32)
    for name, beam in (("greedy", greedy), ("beam4", 4)):
        text = translate_ids.lower(params, src, cfg=cfg, beam=beam).as_text(debug_info=False)
        (out / f"decode_{name}_{dtype}.mlir").write_text(text)
    tx, _ = make_optimizer(default_config().optimizer, cfg)
    step = jit_train_step(Transformer(cfg), tx, label_smoothing=0.1)
    text = step.lower(create_state(cfg, tx, seed=0), {"inputs": src, "targets": src}).as_text(debug_info=False)
    (out / f"train_{dtype}.mlir").write_text(text)
"""


def ops(text: str) -> collections.Counter:
    """The program's lines with SSA value and function names abstracted (so renumbering is no difference)."""
    lines = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#loc"):
            continue
        line = re.sub(r"loc\(.*\)$", "", line)
        line = re.sub(r"%[A-Za-z_]*[0-9]*(_[0-9]+)?(:[0-9]+)?(#[0-9]+)?", "%v", line)
        line = re.sub(r"@[A-Za-z_]+_[0-9]+", "@f", line)
        if "stablehlo.while(" in line or line.startswith(("stablehlo.return", "^bb")):
            line = ",".join(sorted(line.split(",")))  # loop carries in another order are the same loop
        lines.append(line)
    return collections.Counter(lines)


def lower(checkout: pathlib.Path, out: pathlib.Path) -> None:
    out.mkdir(parents=True)
    subprocess.run([sys.executable, "-c", LOWER, str(out)], cwd=checkout, check=True, timeout=900)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=pathlib.Path)
    parser.add_argument("after", type=pathlib.Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        dirs = {side: pathlib.Path(scratch) / side for side in ("before", "after")}
        for side, directory in dirs.items():
            lower(getattr(args, side).resolve(), directory)
        report = {}
        for path in sorted(dirs["before"].iterdir()):
            before, after = ops(path.read_text()), ops((dirs["after"] / path.name).read_text())
            only = {"before": before - after, "after": after - before}
            report[path.stem] = {
                "ops_before": sum(before.values()),
                "ops_after": sum(after.values()),
                "differing_ops": sum(only["before"].values()) + sum(only["after"].values()),
                "examples": {side: [line[:160] for line in list(c)[:3]] for side, c in only.items()},
            }
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
