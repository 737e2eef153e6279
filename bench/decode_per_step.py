"""One decoding step, ours against CTranslate2, at fixed length and a grid of decoder rows. Prints JSON.

    python bench/decode_per_step.py [--config multi30k] [--grid 1x1,1x4,4x4,8x4,32x4,32x1,128x1] [--rounds 5]

On real data the two engines differ in two ways at once: what one step of a given number of rows costs, and how
many row-steps each computes (CTranslate2 drops a sentence from its batch the step it finishes; our compiled
program steps every row until the batch's last sentence ends). This benchmark takes the second away to measure
the first. Both decode the same random-init weights of the config's model (float32; the CTranslate2 export of
the same params), sources of ``--source-length`` tokens, for exactly source length + 50 steps: random weights
never emit EOS in ours (checked: every row's output is full length), and CTranslate2 is held there by
``min_decoding_length = max_decoding_length``. Ours gets the params as the translate path gives them (with the
weight copies a program of 2-32 rows reads, made once: model/feature_major.py), and once more with every product
row-major whatever the rows (``t2t_jax_row_major``, one stream). A grid entry ``BxK`` is B
sentences at beam K (B·K rows), one batch, ``--threads`` threads for both, once as one stream and once as two
streams of that batch at once (``engines``); a two-stream figure is the wall time per batch. The engines
alternate over ``--rounds`` rounds; each round's figure is the best of ``--repeats`` calls after a first
(warming) one, and the JSON gives every round and the median in ms per step.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from bench.machine import recorded  # noqa: E402
from t2t_jax.config.loading import load_config, model_config  # noqa: E402
from t2t_jax.decode.decoder import decode_length, translate_ids  # noqa: E402
from t2t_jax.export.ctranslate2 import export_ctranslate2, vocabulary_tokens  # noqa: E402
from t2t_jax.model import feature_major  # noqa: E402
from t2t_jax.train.state import init_params  # noqa: E402


def best_seconds_per_batch(fn, repeats: int) -> float:
    """The best of ``repeats`` timed calls of ``fn`` (which returns the batches it decoded), per batch."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        batches = fn()
        times.append((time.perf_counter() - start) / batches)
    return min(times)


def row_major_program(params, sources, cfg, beam: int):
    """Our decoder compiled with every product row-major whatever the rows (as before model/feature_major.py)."""
    saved, feature_major.ROWS = feature_major.ROWS, range(0)
    try:  # a new function: traced afresh under the patch
        run = jax.jit(lambda p, s: translate_ids.__wrapped__(p, s, cfg=cfg, beam=beam))
        return run.lower(params, sources).compile()
    finally:
        feature_major.ROWS = saved


def engines(params, cfg, sources, beam: int, threads: int, ct2_dir: str):
    """({name: run}, {name: output lengths}, steps): ours (``translate_ids``) and CTranslate2 float32 on
    ``sources`` [B, L], each as one stream and as two streams of the same batch decoding at once (ours: two
    threads, as the translate path keeps two batches in flight; CTranslate2: ``inter_threads=2``, one thread each,
    its own way of decoding batches in parallel). A run returns how many batches it decoded."""
    import ctranslate2

    steps = decode_length(cfg, sources.shape[1])
    names, _ = vocabulary_tokens(cfg)
    one = ctranslate2.Translator(ct2_dir, device="cpu", compute_type="float32", intra_threads=threads)
    two = ctranslate2.Translator(ct2_dir, device="cpu", compute_type="float32", inter_threads=2, intra_threads=1)
    tokens = [[names[i] for i in row[:-1]] for row in sources]  # CTranslate2 appends the EOS itself
    limits = {"beam_size": beam, "max_batch_size": len(tokens), "min_decoding_length": steps}
    limits["max_decoding_length"] = steps

    prepared = feature_major.with_copies(params, cfg)  # the copies few rows read, made once as the translate path does
    row_major = row_major_program(params, sources, cfg, beam)

    def ours():
        return jax.block_until_ready(translate_ids(prepared, sources, cfg=cfg, beam=beam))

    def ours_row_major():
        jax.block_until_ready(row_major(params, sources))
        return 1

    def ours_one():
        ours()
        return 1

    def ours_two():
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda _: ours(), range(2)))
        return 2

    def ct2_one():
        return one.translate_batch(tokens, **limits)

    def ct2_one_batch():
        ct2_one()
        return 1

    def ct2_two():
        two.translate_batch(tokens * 2, **limits)  # two batches of len(tokens), one per translator thread
        return 2

    def ours_lengths():
        best = np.asarray(ours()[0])[:, 0]
        return ((best != cfg.pad_id) & (best != cfg.eos_id)).sum(-1)

    def ct2_lengths():
        return np.array([len(result.hypotheses[0]) for result in ct2_one()])

    runs = {
        "t2t_jax": ours_one,
        "t2t_jax_row_major": ours_row_major,
        "ctranslate2_float32": ct2_one_batch,
        "t2t_jax_two_streams": ours_two,
        "ctranslate2_float32_two_streams": ct2_two,
    }
    return runs, {"t2t_jax": ours_lengths, "ctranslate2_float32": ct2_lengths}, steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="multi30k", help="the recipe whose model shapes are measured")
    parser.add_argument("--grid", default="1x1,1x4,4x4,8x4,32x4,32x1,128x1", help="sentences x beam, comma-separated")
    parser.add_argument("--source-length", type=int, default=16, help="source tokens, EOS included")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = parser.parse_args()
    cfg = dataclasses.replace(model_config(load_config(args.config)), dtype="float32")
    params = init_params(cfg, seed=0)
    ct2_dir = str(export_ctranslate2(params, cfg, pathlib.Path(tempfile.mkdtemp()) / "ct2"))
    report = {"config": args.config, "dtype": "float32", "threads": args.threads, "results": []}
    for entry in args.grid.split(","):
        batch, beam = map(int, entry.split("x"))
        sources = np.random.default_rng(0).integers(4, cfg.vocab_size, (batch, args.source_length), dtype=np.int32)
        sources[:, -1] = cfg.eos_id
        runs, lengths, steps = engines(params, cfg, sources, beam, args.threads, ct2_dir)
        for name, output_lengths in lengths.items():  # compiles ours; every output must run the whole length
            if not (output_lengths() == steps).all():
                raise SystemExit(f"{name} at {entry}: an output stopped before {steps} steps; the timing is not fixed")
        rounds = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, run in runs.items():
                run()  # a first call: thread pools and caches warm
                rounds[name].append(round(1000 * best_seconds_per_batch(run, args.repeats) / steps, 3))
        result = {"sentences": batch, "beam": beam, "rows": batch * beam, "steps": steps}
        for name, times in rounds.items():
            result[f"{name}_ms_per_step_rounds"] = times
            result[f"{name}_ms_per_step"] = statistics.median(times)
        row_major_ms = result["t2t_jax_row_major_ms_per_step"]
        result["feature_major_speedup"] = round(row_major_ms / result["t2t_jax_ms_per_step"], 3)
        for streams in ("", "_two_streams"):
            result[f"t2t_jax_speed_over_ctranslate2{streams}"] = round(
                result[f"ctranslate2_float32{streams}_ms_per_step"] / result[f"t2t_jax{streams}_ms_per_step"], 3
            )
        report["results"].append(result)
        print(json.dumps(result), file=sys.stderr, flush=True)
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
