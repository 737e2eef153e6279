"""One prepared check of an accelerator (or of the CPU, ``--smoke``): train step, decoding, minutes to BLEU. JSON out.

    python bench/device_check.py [--out bench/results/device_check_<kind>.json] [--data-dir DIR]
    python bench/device_check.py --smoke    # the same code paths at toy sizes, on CPU, in well under a minute

On whatever ``jax.devices()`` offers it measures, in one process:

- ``matmul``: the device's achievable matmul rate now (square n×n, bf16 and f32 inputs, f32 accumulation), the
  denominator of ``mfu_measured``; ``nominal_bf16_tflops`` is the vendor's dense bf16 peak where the device is
  known (``mfu_nominal``).
- ``train``: the paper's base and big models (config/presets/base.py, big.py) at ~25k target tokens per step
  (fewer rows when that does not fit), bf16 and f32 through the einsum attention, and bf16 through
  ``jax.nn.dot_product_attention`` (attention="fused", cuDNN where available): tokens/s, step time, MFU, the
  compiled program's memory and the device's peak, and how many XLA compilations the first 20 steps caused
  (one is right: a second means a step retraced).
- ``decode``: the base model, beam 4, batch 64 and 1, on random weights (no EOS: every hypothesis runs to the
  length limit, a fixed amount of work), ours against Hugging Face ``generate`` on the same exported weights
  on the same device (when torch and transformers import there).
- ``minutes_to_bleu``: the Multi30k main job (config/presets/multi30k.py) for a fixed training budget, then its
  final stage (checkpoint averaging chosen on val, beam 4) on test_2016_flickr: steps and test sacreBLEU.
  It needs ``--data-dir`` (holding multi30k/) or T2T_DATA_DIR; ``--smoke`` writes a tiny synthetic corpus.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from bench.machine import describe  # noqa: E402
from bench.peak_matmul import matmul_rate  # noqa: E402
from t2t_jax import config as configs  # noqa: E402
from t2t_jax.config import model_config  # noqa: E402
from t2t_jax.model import Transformer  # noqa: E402
from t2t_jax.model.flops import train_step_flops  # noqa: E402
from t2t_jax.train.state import create_state, init_params, make_optimizer  # noqa: E402
from t2t_jax.train.step import jit_train_step  # noqa: E402

# Dense bf16 peak, TFLOP/s, by a substring of jax's device_kind (vendor data sheets; sparsity not counted).
NOMINAL_BF16_TFLOPS = {
    "H200": 989.0,
    "H100 PCIe": 756.0,
    "H100": 989.0,  # SXM (device_kind "NVIDIA H100 80GB HBM3")
    "A100": 312.0,
    "L40S": 362.0,
    "L4": 121.0,
    "A10": 125.0,
    "TPU v4": 275.0,
    "TPU v5 lite": 197.0,
    "TPU v5": 459.0,
    "TPU v6": 918.0,
}
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"  # jax records it once per XLA compilation
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"  # ... or this, when the persistent cache serves one

FULL = {
    "matmul_size": 8192,
    "train_sizes": ("base", "big"),
    "train_rows": 96,  # × 256 tokens = 24,576 target tokens per step (the paper's ~25k)
    "train_length": 256,
    "train_steps": 20,
    "decode_batches": (64, 1),
    "decode_source_length": 20,  # Multi30k's mean source length in subwords is ~15
    "budget_minutes": 4.0,
}
SMOKE = {
    "matmul_size": 256,
    "train_sizes": ("smoke",),
    "train_rows": 4,
    "train_length": 16,
    "train_steps": 20,
    "decode_batches": (4, 1),
    "decode_source_length": 6,
    "budget_minutes": 0.1,
}
SMOKE_MODEL = [
    "--config.model.vocab_size=128",
    "--config.model.d_model=32",
    "--config.model.num_heads=2",
    "--config.model.d_ff=64",
    "--config.model.encoder_layers=1",
    "--config.model.decoder_layers=1",
]


class CompileCounter:
    """Counts XLA compilations while active (jax.monitoring's per-compilation duration event)."""

    def __init__(self):
        self.count, self.active = 0, False
        jax.monitoring.register_event_duration_secs_listener(lambda event, _seconds, **_: self._listen(event))
        jax.monitoring.register_event_listener(lambda event, **_: self._listen(event))

    def _listen(self, event):
        if self.active and event in (COMPILE_EVENT, CACHE_HIT_EVENT):
            self.count += 1

    @contextlib.contextmanager
    def counting(self):
        self.count, self.active = 0, True
        try:
            yield self
        finally:
            self.active = False


def nominal_tflops(device_kind: str) -> float | None:
    for name, tflops in NOMINAL_BF16_TFLOPS.items():  # longer names first where one contains another
        if name in device_kind:
            return tflops
    return None


def device_peak_bytes() -> int | None:
    """The device allocator's peak since the process started (None where the backend keeps no stats, e.g. CPU)."""
    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def out_of_memory(error: Exception) -> bool:
    text = str(error)
    return "RESOURCE_EXHAUSTED" in text or "Out of memory" in text or "out of memory" in text


def measure_matmul(size: int) -> dict:
    rates = {dtype: matmul_rate(size, getattr(jnp, dtype), repeats=5) for dtype in ("bfloat16", "float32")}
    return {"size": size, **{f"{d}_tflops": r / 1e3 for d, r in rates.items()}}


def train_model(size: str, dtype: str, attention: str):
    """The run config and ModelConfig of one train-step case."""
    overrides = [f"--config.model.dtype={dtype}", f"--config.model.attention={attention}"]
    if size == "smoke":
        return model_config(configs.get("base", *SMOKE_MODEL, *overrides))
    return model_config(configs.get(size, *overrides))


def train_case(size, dtype, attention, plan, counter, matmul) -> dict:
    """One (size, dtype, attention) train step at the plan's batch, halving the rows on out-of-memory."""
    cfg = train_model(size, dtype, attention)
    rows, length = plan["train_rows"], plan["train_length"]
    while True:
        try:
            return _train_case(cfg, rows, length, plan["train_steps"], counter, matmul)
        except Exception as error:  # XlaRuntimeError: its class moved between jaxlib versions
            if not out_of_memory(error) or rows == 1:
                raise
            rows //= 2


def _train_case(cfg, rows, length, steps, counter, matmul) -> dict:
    tx, _ = make_optimizer(configs.get("base").optimizer, cfg)
    state = create_state(cfg, tx, seed=0)
    rng = np.random.default_rng(0)
    batch = {k: rng.integers(3, cfg.vocab_size, (rows, length)).astype(np.int32) for k in ("inputs", "targets")}
    batch = jax.device_put(batch)
    step = jit_train_step(Transformer(cfg), tx, 0.1)
    times = []
    with counter.counting():
        start = time.perf_counter()
        state, sums = step(state, batch)
        jax.block_until_ready(sums)
        first = time.perf_counter() - start
        for _ in range(steps - 1):
            start = time.perf_counter()
            state, sums = step(state, batch)
            jax.block_until_ready(sums)  # per-step times: the median is robust to a stray slow step
            times.append(time.perf_counter() - start)
    seconds = float(np.median(times))
    compiled_memory = step.lower(state, batch).compile().memory_analysis()  # after the count: it compiles too
    flops = train_step_flops(cfg, rows, length, length)
    measured = matmul[f"{cfg.dtype}_tflops"] * 1e12
    nominal = matmul.get("nominal_bf16_tflops")
    return {
        "rows": rows,
        "length": length,
        "target_tokens_per_step": rows * length,
        "seconds_per_step": seconds,
        "target_tokens_per_s": rows * length / seconds,
        "first_step_seconds": first,
        "model_tflops_per_s": flops / seconds / 1e12,
        "mfu_measured": flops / seconds / measured,
        "mfu_nominal": flops / seconds / (nominal * 1e12) if nominal else None,
        "compilations_in_steps": counter.count,  # 1: the first step's; more means a step retraced
        "steps": steps,
        "compiled_temp_bytes": getattr(compiled_memory, "temp_size_in_bytes", None),
        "compiled_argument_bytes": getattr(compiled_memory, "argument_size_in_bytes", None),
        "device_peak_bytes_so_far": device_peak_bytes(),
        "loss": float(sums["loss"] / sums["tokens"]),
    }


def measure_train(plan, counter, matmul, log) -> dict:
    results = {}
    for size in plan["train_sizes"]:
        for dtype, attention in (("bfloat16", "dot_product"), ("float32", "dot_product"), ("bfloat16", "fused")):
            name = f"{size}_{dtype}_{attention}"
            results[name] = train_case(size, dtype, attention, plan, counter, matmul)
            log(name, results[name])
    return results


def timed(fn, repeats=3) -> tuple[float, float]:
    """(first call's seconds, best of ``repeats`` warm calls)."""
    start = time.perf_counter()
    jax.block_until_ready(fn())
    first = time.perf_counter() - start
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - start)
    return first, best


def hf_generate(params, cfg, src, new_tokens):
    """bench/decode.py's HF runner on torch's best device, or None when torch / transformers do not import."""
    try:
        import torch
        import transformers
    except ImportError:
        return None
    from bench.decode import hf_generate as runner

    transformers.logging.set_verbosity_error()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return runner(jax.device_get(params), cfg, src, new_tokens, device=device)


def measure_decode(plan, smoke, log) -> dict:
    from t2t_jax.decode.decoder import decode_length, translate_ids

    size = "smoke" if smoke else "base"
    results = {}
    for dtype in ("float32", "bfloat16"):
        cfg = train_model(size, dtype, "dot_product")
        params = jax.device_put(init_params(cfg, seed=0))
        for batch in plan["decode_batches"]:
            length = plan["decode_source_length"]
            src = np.random.default_rng(0).integers(3, cfg.vocab_size, (batch, length)).astype(np.int32)
            first, warm = timed(lambda p=params, s=src, c=cfg: translate_ids(p, s, cfg=c, beam=4))
            entry = {
                "batch": batch,
                "beam": 4,
                "first_seconds": first,
                "seconds": warm,
                "sentences_per_s": batch / warm,
            }
            if dtype == "float32":  # HF generate computes in float32: the like-for-like pair
                runner = hf_generate(params, cfg, src, decode_length(cfg, length))
                if runner is not None:
                    _, hf_warm = timed(runner)
                    entry["hf_generate_seconds"] = hf_warm
                    entry["speedup_over_hf_generate"] = hf_warm / warm
            results[f"{size}_{dtype}_beam4_batch{batch}"] = entry
            log(f"{size}_{dtype}_beam4_batch{batch}", entry)
    return results


def write_synthetic_multi30k(root: pathlib.Path) -> pathlib.Path:
    """A tiny corpus in the Multi30k layout (a word-for-word 'translation' of random sentences)."""
    rng = np.random.default_rng(0)
    letters = list("abcdefghijklmnopqrstuvwxyz")
    words = ["".join(rng.choice(letters, rng.integers(3, 8))) for _ in range(60)]
    folder = root / "multi30k"
    folder.mkdir(parents=True)
    for split, count in (("train", 400), ("val", 16), ("test_2016_flickr", 16)):
        sentences = [rng.choice(words, rng.integers(3, 9)) for _ in range(count)]
        (folder / f"{split}.en").write_text("\n".join(" ".join(s) for s in sentences) + "\n", encoding="utf-8")
        translated = "\n".join(" ".join(w[::-1] for w in s) for s in sentences)
        (folder / f"{split}.de").write_text(translated + "\n", encoding="utf-8")
    return root


def measure_minutes_to_bleu(plan, smoke, data_dir, log) -> dict:
    """The main job's config for ``budget_minutes`` of training, then its final stage on test."""
    import t2t_jax

    workdir = tempfile.mkdtemp(prefix="device_check_")
    overrides = [f"--config.train.max_minutes={plan['budget_minutes']}", f"--config.data.data_dir={data_dir}"]
    if smoke:
        overrides += SMOKE_MODEL + [
            "--config.data.batch_tokens=256",
            "--config.data.max_length=16",
            "--config.model.max_len=32",
            "--config.train.steps=40",
            "--config.train.eval_every=20",
            "--config.train.bleu_every=0",
            "--config.checkpoint.every_steps=10",
            "--config.final.average_choices='1,2'",
            "--config.final.alpha_choices='0.6'",
        ]
    config = t2t_jax.config.get("multi30k", *overrides)
    start = time.perf_counter()
    run = t2t_jax.train_and_evaluate(config, workdir, log=lambda *a, **k: None)
    test = run.reports.get("test", {})
    result = {
        "config": "multi30k",
        "budget_minutes": plan["budget_minutes"],
        "steps": run.summary["steps"],
        "stopped": run.summary["stopped"],
        "train_seconds": run.summary["wall_seconds"],
        "total_seconds": time.perf_counter() - start,
        "test_sacrebleu": test["sacrebleu"]["score"] if test else None,
        "test_report": test,
    }
    log("minutes_to_bleu", result)
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="toy sizes on any backend, in well under a minute")
    parser.add_argument("--out", help="where to write the JSON (default: stdout only)")
    parser.add_argument("--sections", default="matmul,train,decode,minutes_to_bleu")
    parser.add_argument("--data-dir", default=os.environ.get("T2T_DATA_DIR"), help="holds multi30k/")
    args = parser.parse_args(argv)
    plan = SMOKE if args.smoke else FULL
    sections = args.sections.split(",")
    log = lambda name, entry: print(json.dumps({name: entry}), file=sys.stderr, flush=True)  # noqa: E731
    report = {"machine": describe(), "smoke": args.smoke, "date": time.strftime("%Y-%m-%d"), "plan": plan}
    counter = CompileCounter()
    matmul = measure_matmul(plan["matmul_size"])
    matmul["nominal_bf16_tflops"] = nominal_tflops(report["machine"]["device_kind"])
    report["matmul"] = matmul
    log("matmul", matmul)
    if "train" in sections:
        report["train"] = measure_train(plan, counter, matmul, log)
    if "decode" in sections:
        report["decode"] = measure_decode(plan, args.smoke, log)
    if "minutes_to_bleu" in sections:
        with tempfile.TemporaryDirectory() as scratch:
            data_dir = write_synthetic_multi30k(pathlib.Path(scratch)) if args.smoke else args.data_dir
            if data_dir is None:
                parser.error("minutes_to_bleu needs --data-dir (a folder holding multi30k/) or T2T_DATA_DIR")
            report["minutes_to_bleu"] = measure_minutes_to_bleu(plan, args.smoke, data_dir, log)
    text = json.dumps(report, indent=2, default=str)
    if args.out:
        pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(args.out).write_text(text + "\n", encoding="utf-8")
    print(text)
    return report


if __name__ == "__main__":
    main()
