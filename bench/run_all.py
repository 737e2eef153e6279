"""All benchmarks in one run, one JSON document: ``python bench/run_all.py [--quick] [--out FILE]``.

Each benchmark runs in its own process (so its peak memory is its own): the achievable matmul rate
(f32, bf16 inputs + f32 accumulation) measured now is the denominator of every MFU figure; train-step
tokens/s, GFLOP/s, MFU and the ratio to the PyTorch reference (bench/train_step.py); decoding vs Hugging
Face MarianMTModel.generate (bench/decode.py); and the input pipeline's headroom over the measured train
step (bench/input_pipeline.py, needs $T2T_DATA_DIR). On an accelerator ``--nominal-peak-tflops`` adds MFU
against the chip's data-sheet bf16 peak.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.machine import recorded  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def run(script: str, *args: str, env: dict | None = None) -> dict:
    """The JSON a benchmark prints on stdout (progress goes to stderr, shown as it comes)."""
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, str(HERE / script), *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=HERE.parent,
        check=True,
        env={**os.environ, **(env or {})},
    ).stdout
    result = json.loads(out)
    result["benchmark_seconds"] = time.perf_counter() - start
    print(f"[run_all] {script} done in {result['benchmark_seconds']:.0f}s", file=sys.stderr, flush=True)
    return result


def train_summary(train: dict, peak: dict, nominal_tflops: float | None) -> dict:
    summary = {}
    for size, entry in train["results"].items():
        rows = {}
        for dtype in ("float32", "bfloat16"):
            jax_entry = entry[f"jax_{dtype}"]
            rows[dtype] = {
                "target_tokens_per_s": jax_entry["target_tokens_per_s"],
                "gflops_per_s": jax_entry["gflops_per_s"],
                "mfu_vs_measured_peak": jax_entry["gflops_per_s"] / peak[f"{dtype}_gflops_per_s"],
                "ratio_to_torch_f32": jax_entry.get("ratio_to_torch_f32"),
            }
            if nominal_tflops:
                rows[dtype]["mfu_vs_nominal_bf16_peak"] = jax_entry["gflops_per_s"] / (1000 * nominal_tflops)
        if "torch_float32" in entry:
            rows["torch_float32_tokens_per_s"] = entry["torch_float32"]["target_tokens_per_s"]
        summary[size] = rows
    return summary


def decode_summary(decode: dict) -> dict:
    by_key = {(r["size"], r["batch"], r["mode"]): r for r in decode["results"]}
    summary = {}
    for (size, batch, mode), r in by_key.items():
        row = summary.setdefault(f"{size}_batch{batch}", {})
        row[f"{mode}_sentences_per_s"] = r["sentences_per_s"]
    for row in summary.values():
        if "hf_marian_beam4_sentences_per_s" in row:
            row["beam4_vs_hf"] = row["beam4_cached_sentences_per_s"] / row["hf_marian_beam4_sentences_per_s"]
        if "hf_marian_beam4_bf16_sentences_per_s" in row:
            row["beam4_bf16_vs_hf_bf16"] = (
                row["beam4_cached_bf16_sentences_per_s"] / row["hf_marian_beam4_bf16_sentences_per_s"]
            )
        if "greedy_uncached_sentences_per_s" in row:
            row["cached_vs_uncached_greedy"] = (
                row["greedy_cached_sentences_per_s"] / row["greedy_uncached_sentences_per_s"]
            )
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny size only, 3 train steps (a few minutes on 2 CPUs)")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--nominal-peak-tflops", type=float, help="the chip's bf16 data-sheet peak (H200: 989)")
    parser.add_argument("--out", help="also write the document here")
    args = parser.parse_args()
    sizes = "tiny" if args.quick else "tiny,base"
    peak = run("peak_matmul.py")
    train = run("train_step.py", "--sizes", sizes, "--steps", str(3 if args.quick else args.steps))
    decode = run("decode.py", "--sizes", sizes, "--batches", "1,64")
    document = {
        "machine": {**train["machine"], "platform": platform.platform(), "cpus": os.cpu_count()},
        "peak_matmul": peak,
        "train": train_summary(train, peak, args.nominal_peak_tflops),
        "decode": decode_summary(decode),
        "memory": {"train_step": train["memory"], "decode": decode["memory"]},
        "raw": {"train_step": train, "decode": decode},
    }
    data_dir = os.environ.get("T2T_DATA_DIR", str(HERE.parents[1] / "shared" / "data"))
    if (pathlib.Path(data_dir) / "multi30k").is_dir():
        pipeline = run("input_pipeline.py", env={"T2T_DATA_DIR": data_dir})
        consumed = train["results"]["tiny"]["jax_bfloat16"]["target_tokens_per_s"]
        document["input_pipeline"] = {
            "target_tokens_per_s": pipeline["target_tokens_per_s"],
            "batches_per_s": pipeline["batches_per_s"],
            "packing_efficiency": pipeline["packing_efficiency"],
            "headroom_vs_tiny_bf16_train_step": pipeline["target_tokens_per_s"] / consumed,
        }
        document["memory"]["input_pipeline"] = pipeline["memory"]
        document["raw"]["input_pipeline"] = pipeline
    text = json.dumps(recorded(document), indent=2)
    if args.out:
        pathlib.Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
