"""Where a decoding step's time goes: per-op wall time inside the jitted search, grouped by the model code
that produced each op. Prints JSON.

    python bench/profile_decode.py [--size tiny] [--batch 64] [--beam 4] [--dtype float32]
    T2T_DATA_DIR=../shared/data python bench/profile_decode.py --workdir W [--checkpoint averaged] [--batch 64]

Random weights never emit EOS, so every sentence runs to source length + 50; with ``--workdir`` the
trained model decodes ``--batch`` test sentences of its dataset (the middle of the length-sorted set,
padded as the translate command pads them), so the profile shows real step counts and early stops.

Runs ``translate_ids`` once under ``jax.profiler`` (with ``--xla_cpu_enable_xprof_traceme``, set here
before jax is imported, XLA:CPU emits a trace event per executed op), reads the Perfetto trace and names
each op by its ``op_name`` in the compiled HLO (a fusion without one: its last op's). Figures are summed
op durations per step; XLA:CPU may run one op on both threads (two events), so the sum can exceed
``wall_ms_per_step`` (the profiled run's wall time per step, profiler overhead included).
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import pathlib
import re
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.machine import recorded  # noqa: E402

os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_cpu_enable_xprof_traceme=true"

import jax  # noqa: E402
import numpy as np  # noqa: E402

from bench.train_step import SIZES, model_config  # noqa: E402
from t2t_jax.decode.decoder import translate_ids  # noqa: E402
from t2t_jax.train.state import init_params  # noqa: E402

RUNTIME_EVENTS = ("ThunkExecutor", "SlinkyThreadPool", "$")
GROUPS = [
    ("output projection (logits)", r"embed\.attend"),
    ("self-attention", r"self_attn\._attend_cached"),
    ("cross-attention", r"cross_attn\._attend_cached"),
    ("cache writes", r"_self_cache|_cross_cache"),
    ("feed-forward", r"/ffn/"),
    ("attention projections", r"_attn/(query|key|value|out)?/?btd|bthk,hkd"),
    ("layer norms", r"/ln_"),
    ("search (top-k, bookkeeping) and other", r""),
]


def op_names(hlo: str) -> dict:
    """HLO instruction name -> op_name metadata (for fusions without one: the last op inside)."""
    bodies = dict(re.findall(r"\n%([\w.\-]+) [^\n]*\{\n(.*?)\n\}", hlo, re.S))
    names = {}
    for name, line in re.findall(r"\n\s*(?:ROOT )?%([\w.\-]+) = ([^\n]*)", hlo):
        found = re.search(r'op_name="([^"]*)"', line)
        if not found and (calls := re.search(r"calls=%([\w.\-]+)", line)):
            inner = re.findall(r'op_name="([^"]*)"', bodies.get(calls.group(1), ""))
            found = inner[-1] if inner else None
            names[name] = found or ""
            continue
        names[name] = found.group(1) if found else ""
    return names


def real_batch(workdir, checkpoint, batch):
    """(cfg, params, [batch, bucket] ids): ``batch`` test sentences from the middle of the length order."""
    import ml_collections

    from t2t_jax.data.pipeline import bucket_length, pad_batch
    from t2t_jax.data.sources import split_text
    from t2t_jax.decode.translate import load_for_inference

    model = load_for_inference(workdir, checkpoint)
    sources, _ = split_text(ml_collections.ConfigDict(model.config), "test")
    ids = sorted(model.tokenizer.encode_batch(sources), key=len)
    middle = ids[max(len(ids) // 2 - batch // 2, 0) :][:batch]
    length = bucket_length(max(map(len, middle)), model.cfg.max_len)
    return model.cfg, model.params, pad_batch(middle, batch, length, model.cfg.pad_id)


def loop_steps(params, src, cfg, beam: int) -> int:
    """The steps the search's loop takes on ``src`` (a trained model stops early), read off its final carry."""
    from t2t_jax.decode import search

    seen, plain = [], search.run_loop

    def recording(cond, body, carry, phases, grow_fn=None):
        out = plain(cond, body, carry, phases, grow_fn)
        jax.debug.callback(lambda t: seen.append(int(t)), out.state.t)
        return out

    search.run_loop = recording
    try:  # a new function: traced afresh under the patch
        jax.block_until_ready(jax.jit(lambda p, s: translate_ids.__wrapped__(p, s, cfg=cfg, beam=beam))(params, src))
    finally:
        search.run_loop = plain
    return seen[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="tiny", choices=sorted(SIZES))
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--source-length", type=int, default=20)
    parser.add_argument("--workdir", help="a trained workdir: its model on real test sentences")
    parser.add_argument("--checkpoint", default="averaged")
    args = parser.parse_args()
    if args.workdir:
        cfg, params, src = real_batch(args.workdir, args.checkpoint, args.batch)
    else:
        cfg = model_config(SIZES[args.size], args.dtype)
        params = init_params(cfg, seed=0)
        src = np.random.default_rng(0).integers(3, cfg.vocab_size, (args.batch, args.source_length)).astype(np.int32)
    run = lambda: jax.block_until_ready(translate_ids(params, src, cfg=cfg, beam=args.beam))  # noqa: E731
    run()
    names = op_names(translate_ids.lower(params, src, cfg=cfg, beam=args.beam).compile().as_text())
    directory = tempfile.mkdtemp()
    with jax.profiler.trace(directory, create_perfetto_trace=True):
        start = time.perf_counter()
        run()
        wall = time.perf_counter() - start
    trace = json.load(gzip.open(glob.glob(f"{directory}/**/*.trace.json.gz", recursive=True)[0]))
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and not e["name"].startswith(RUNTIME_EVENTS)]
    steps = loop_steps(params, src, cfg, args.beam) if args.workdir else args.source_length + 50
    per_group, threads = collections.Counter(), {e["tid"] for e in events}
    nested = {e["name"] for e in events if e["name"].startswith(("cond", "while"))}  # containers: counted inside
    for event in events:
        if event["name"] in nested:
            continue
        op = names.get(event["name"], "")
        group = next(label for label, pattern in GROUPS if re.search(pattern, op))
        per_group[group] += event["dur"] / 1000 / steps
    print(
        json.dumps(
            recorded(
                {
                    "size": f"{args.workdir} ({args.checkpoint})" if args.workdir else args.size,
                    "batch": args.batch,
                    "beam": args.beam,
                    "dtype": args.dtype,
                    "steps": steps,
                    "wall_ms_per_step": 1000 * wall / steps,
                    "threads": len(threads),
                    "op_ms_per_step": {k: round(v, 3) for k, v in per_group.most_common()},
                }
            ),
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
