"""Train-step throughput of t2t_jax vs a PyTorch reference on the same sizes. Prints JSON.

    python bench/train_step.py [--sizes tiny,base] [--steps 8] [--flax] [--launcher single|mesh|pmap] [--fake-devices 8]

Reports target tokens/s, seconds/step and model GFLOP/s (analytic: 3x forward
matmul FLOPs incl. attention and the output projection) for float32 and
bfloat16 compute, and the ratio to torch.nn.Transformer (float32) and, with ``--flax``, to a Transformer of Flax's
own layers laid out as the Flax WMT example's (bench/flax_reference.py), in the same dtype.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.machine import recorded  # noqa: E402

if "--fake-devices" in sys.argv:  # must reach XLA before jax is imported
    _count = sys.argv[sys.argv.index("--fake-devices") + 1]
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={_count}"

import jax  # noqa: E402
import numpy as np  # noqa: E402

from bench.memory import minor_page_faults, peak_memory  # noqa: E402
from t2t_jax.config import default_config  # noqa: E402
from t2t_jax.model import ModelConfig, Transformer  # noqa: E402
from t2t_jax.model.flops import train_step_flops  # noqa: E402
from t2t_jax.train.parallel import make_launcher  # noqa: E402
from t2t_jax.train.state import create_state, make_optimizer  # noqa: E402
from t2t_jax.train.step import jit_train_step  # noqa: E402

SIZES = {
    "tiny": dict(vocab_size=8192, d_model=256, num_heads=4, d_ff=1024, layers=3, batch=32, length=64),
    "base": dict(vocab_size=32768, d_model=512, num_heads=8, d_ff=2048, layers=6, batch=16, length=64),
}


def model_config(size: dict, dtype: str) -> ModelConfig:
    return ModelConfig(
        vocab_size=size["vocab_size"],
        d_model=size["d_model"],
        num_heads=size["num_heads"],
        d_ff=size["d_ff"],
        encoder_layers=size["layers"],
        decoder_layers=size["layers"],
        dropout=0.1,
        dtype=dtype,
    )


def bench_jax(size: dict, dtype: str, steps: int, warmup: int, launcher: str) -> dict:
    cfg = model_config(size, dtype)
    tx, _ = make_optimizer(default_config().optimizer, cfg)
    state = create_state(cfg, tx, seed=0)
    rng = np.random.default_rng(0)
    shape = (size["batch"], size["length"])
    batch = {
        "inputs": rng.integers(3, cfg.vocab_size, shape).astype(np.int32),
        "targets": rng.integers(3, cfg.vocab_size, shape).astype(np.int32),
    }
    if launcher == "single":
        step = jit_train_step(Transformer(cfg), tx, label_smoothing=0.1)
        batch = jax.device_put(batch)
    else:
        parallel = make_launcher(launcher, Transformer(cfg), tx, label_smoothing=0.1)
        step, state, batch = parallel.train_step, parallel.put_state(state), parallel.put_batch(batch)
    compile_start = time.perf_counter()
    for _ in range(warmup):
        state, sums = step(state, batch)
    jax.block_until_ready(sums)
    compile_seconds = time.perf_counter() - compile_start
    start, faults = time.perf_counter(), minor_page_faults()
    for _ in range(steps):
        state, sums = step(state, batch)
    jax.block_until_ready(sums)
    seconds = (time.perf_counter() - start) / steps
    faults = (minor_page_faults() - faults) // steps
    flops = train_step_flops(cfg, size["batch"], size["length"], size["length"])
    return {
        "seconds_per_step": seconds,
        "page_faults_per_step": faults,
        "target_tokens_per_s": size["batch"] * size["length"] / seconds,
        "gflops_per_s": flops / seconds / 1e9,
        "warmup_seconds": compile_seconds,
        "loss": float(sums["loss"] / sums["tokens"]),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="tiny,base")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--no-torch", action="store_true")
    parser.add_argument("--flax", action="store_true", help="also time bench/flax_reference.py (Flax's own layers)")
    parser.add_argument("--launcher", default="single", choices=["single", "mesh", "pmap"])
    parser.add_argument("--fake-devices", type=int, default=0, help="XLA host-platform device count (CPU)")
    args = parser.parse_args()
    report = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "jax": jax.__version__,
            "devices": jax.device_count(),
            "backend": jax.default_backend(),
            "launcher": args.launcher,
        },
        "results": {},
    }
    for name in args.sizes.split(","):
        size = SIZES[name]
        entry = {
            "flops_per_step": train_step_flops(
                model_config(size, "float32"), size["batch"], size["length"], size["length"]
            )
        }
        for dtype in ("float32", "bfloat16"):
            entry[f"jax_{dtype}"] = bench_jax(size, dtype, args.steps, args.warmup, args.launcher)
        if not args.no_torch:
            from bench.torch_reference import benchmark

            entry["torch_float32"] = benchmark(
                size, size["batch"], size["length"], args.steps, args.warmup, threads=os.cpu_count()
            )
            reference = entry["torch_float32"]["target_tokens_per_s"]
            entry["torch_float32"]["gflops_per_s"] = (
                entry["flops_per_step"] / entry["torch_float32"]["seconds_per_step"] / 1e9
            )
            for dtype in ("float32", "bfloat16"):
                entry[f"jax_{dtype}"]["ratio_to_torch_f32"] = entry[f"jax_{dtype}"]["target_tokens_per_s"] / reference
        if args.flax:
            from bench.flax_reference import benchmark as flax_benchmark

            for dtype in ("float32", "bfloat16"):
                flax = flax_benchmark(size, size["batch"], size["length"], args.steps, args.warmup, dtype)
                entry[f"flax_{dtype}"] = flax
                entry[f"jax_{dtype}"]["ratio_to_flax_same_dtype"] = (
                    entry[f"jax_{dtype}"]["target_tokens_per_s"] / flax["target_tokens_per_s"]
                )
        report["results"][name] = entry
        print(json.dumps({name: entry}), file=sys.stderr, flush=True)
    report["memory"] = peak_memory()
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
