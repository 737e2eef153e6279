"""Decode time by batch size: the translate path at several ``tokens_per_batch`` for greedy and beam 4, with
CTranslate2 float32 timed in every round beside them (the machine's drift). Prints JSON.

    T2T_DATA_DIR=../shared/data python bench/decode_batch_size.py --workdir W [--checkpoint averaged] [--rounds 3]
        [--retire-finished --stop beam_finished]

A search of beam k steps ``k`` rows per sentence, so a batch of ``tokens_per_batch`` padded source tokens
steps ``k * tokens_per_batch / bucket`` rows: the grid covers 32 to 256 rows of <= 16-token sentences for
both. Each setting is decoded once to compile its shapes, then once per round, the rounds alternating every
setting with CTranslate2; the JSON keeps each round's time and the medians. Translations are checked equal
across a search's settings (a batch's padding never changes a sentence's output). With ``--retire-finished``
the grid is the staged path's (RETIRE_GRID: finished sentences leave a batch, so larger batches waste less).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import ml_collections  # noqa: E402

from bench.decode_engines import ct2_translate, run_header  # noqa: E402
from bench.machine import recorded  # noqa: E402
from t2t_jax.checkpoint.params import load_params  # noqa: E402
from t2t_jax.data.sources import split_text  # noqa: E402
from t2t_jax.decode.translate import (  # noqa: E402
    DecodeOptions,
    default_tokens_per_batch,
    load_for_inference,
    translate_texts,
)
from t2t_jax.evaluate.bleu import sacre_bleu  # noqa: E402
from t2t_jax.export.ctranslate2 import export_ctranslate2  # noqa: E402
from t2t_jax.workdir import Workdir  # noqa: E402

GRID = {1: (512, 1024, 2048, 4096), 4: (256, 512, 1024, 2048)}  # beam -> tokens_per_batch
RETIRE_GRID = {1: (1024, 2048, 4096, 8192), 4: (512, 1024, 2048, 4096)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--checkpoint", default="averaged")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--retire-finished", action="store_true", help="the staged path, on RETIRE_GRID")
    parser.add_argument("--stop", default="exact", help="ours' beam-search stop rule (beam_finished: CTranslate2's)")
    args = parser.parse_args()
    grid_of = RETIRE_GRID if args.retire_finished else GRID
    model = load_for_inference(args.workdir, args.checkpoint)
    sources, references = split_text(ml_collections.ConfigDict(model.config), "test")
    times = {f"beam{beam}_tokens{tokens}": [] for beam, grid in grid_of.items() for tokens in grid}
    times.update({f"ctranslate2_float32_beam{beam}": [] for beam in grid_of})
    first, bleu, outputs = {}, {}, {}

    def ours(beam, tokens):
        options = DecodeOptions(beam, tokens_per_batch=tokens, retire_finished=args.retire_finished, stop=args.stop)
        start = time.perf_counter()
        result = translate_texts(sources, model.tokenizer, model.params, model.cfg, options, log=lambda *_: None)
        return result.best, time.perf_counter() - start

    with tempfile.TemporaryDirectory() as scratch:
        _, params = load_params(args.workdir, args.checkpoint)
        export_ctranslate2(params, model.cfg, scratch, spm_path=Workdir(args.workdir).vocabulary)
        for beam, grid in grid_of.items():
            for tokens in grid:
                first[f"beam{beam}_tokens{tokens}"] = round(ours(beam, tokens)[1], 2)  # compiles its shapes
        for _ in range(args.rounds):
            for beam, grid in grid_of.items():
                start = time.perf_counter()
                best, _ = ct2_translate(
                    scratch, sources, model.cfg, beam=beam, compute_type="float32", threads=args.threads, batch=64
                )
                times[f"ctranslate2_float32_beam{beam}"].append(round(time.perf_counter() - start, 2))
                bleu[f"ctranslate2_float32_beam{beam}"] = round(sacre_bleu(best, references)["score"], 2)
                for tokens in grid:
                    name = f"beam{beam}_tokens{tokens}"
                    best, seconds = ours(beam, tokens)
                    times[name].append(round(seconds, 2))
                    bleu[name] = round(sacre_bleu(best, references)["score"], 2)
                    outputs.setdefault(beam, best)
                    assert best == outputs[beam], f"{name}: other translations than beam {beam}'s first setting"
                    print(name, times[name], file=sys.stderr, flush=True)
    report = {
        **run_header(args, model, sources),
        "rounds": args.rounds,
        "retire_finished": args.retire_finished,
        "stop": args.stop,
        "default_tokens_per_batch": {
            f"beam{beam}": default_tokens_per_batch(beam, args.retire_finished) for beam in grid_of
        },
        "runs": {
            name: {
                "median_seconds": statistics.median(seconds),
                "rounds_seconds": seconds,
                "first_run_seconds": first.get(name),
                "sacrebleu": bleu[name],
            }
            for name, seconds in times.items()
        },
    }
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
