"""Training input pipeline throughput on Multi30k (tokenize once, pack per batch). Prints JSON.

    T2T_DATA_DIR=../shared/data python bench/input_pipeline.py [--batches 200]

Compared with the tiny-config train step (bench/train_step.py: 32x64 target slots per step), the
pipeline must produce batches at least 5x faster than the step consumes them.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.machine import recorded  # noqa: E402
from bench.memory import peak_memory  # noqa: E402
from t2t_jax.config import load_config  # noqa: E402
from t2t_jax.data.inputs import make_data  # noqa: E402

TINY_STEP_SECONDS = 0.85  # bench/results/train_step_cpu2.json, tiny f32, this machine


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=200)
    args = parser.parse_args()
    config = load_config("multi30k", ["--config.data.batch_tokens=2048"])
    with tempfile.TemporaryDirectory() as workdir:
        start = time.perf_counter()
        data = make_data(config, workdir, log=lambda *_: None)
        setup = time.perf_counter() - start
        start = time.perf_counter()
        tokens = 0
        for _ in range(args.batches):
            batch = next(data.train)
            tokens += int((batch["targets"] != 0).sum())
        seconds = time.perf_counter() - start
    batches_per_s = args.batches / seconds
    print(
        json.dumps(
            recorded(
                {
                    "dataset": "multi30k en-de",
                    "batch_shape": list(batch["targets"].shape),
                    "setup_seconds_tokenizer_and_encoding": setup,
                    "batches_per_s": batches_per_s,
                    "target_tokens_per_s": tokens / seconds,
                    "packing_efficiency": tokens / (args.batches * batch["targets"].size),
                    "tiny_train_step_batches_per_s": 1 / TINY_STEP_SECONDS,
                    "headroom_vs_tiny_step": batches_per_s * TINY_STEP_SECONDS,
                    "memory": peak_memory(),
                }
            ),
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
