"""Batches in flight: the translate path (``translate_texts``) with one batch decoding at a time and with two,
each from its own thread (``DecodeOptions.batches_in_flight``), on one checkpoint and its test set, alternated
in one process so both see the same machine. Every pass's translations must equal the one-at-a-time ones.
Prints JSON.

    T2T_DATA_DIR=../shared/data python bench/decode_in_flight.py --workdir W [--checkpoint averaged] [--rounds 2]

Greedy, beam 4 and beam 4 with ``retire_finished``; each is decoded once per depth first (compiling its
shapes), then timed ``--rounds`` times per depth, depth 1 before depth 2 in each round.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import ml_collections  # noqa: E402

from bench.machine import recorded  # noqa: E402
from t2t_jax.data.sources import split_text  # noqa: E402
from t2t_jax.decode import translate  # noqa: E402

PATHS = {
    "greedy": translate.DecodeOptions(1),
    "beam4": translate.DecodeOptions(4),
    "beam4_retire_finished": translate.DecodeOptions(4, retire_finished=True),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--checkpoint", default="averaged")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    model = translate.load_for_inference(args.workdir, args.checkpoint)
    sources, _ = split_text(ml_collections.ConfigDict(model.config), "test")

    def run(options, depth):
        options = dataclasses.replace(options, batches_in_flight=depth)
        start = time.perf_counter()
        result = translate.translate_texts(
            sources, model.tokenizer, model.params, model.cfg, options, log=lambda *_: None
        )
        return result.best, round(time.perf_counter() - start, 2)

    report = {"workdir": args.workdir, "checkpoint": args.checkpoint, "step": model.step, "sentences": len(sources)}
    for name, options in PATHS.items():
        reference = {depth: run(options, depth)[0] for depth in (1, 2)}  # compiles every shape
        assert reference[2] == reference[1], f"{name}: two in flight changed the translations"
        seconds = {1: [], 2: []}
        for _ in range(args.rounds):
            for depth in (1, 2):
                best, took = run(options, depth)
                assert best == reference[1], f"{name}: a pass changed the translations"
                seconds[depth].append(took)
        report[name] = {"one_in_flight_seconds": seconds[1], "two_in_flight_seconds": seconds[2]}
        print(name, report[name], file=sys.stderr, flush=True)
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
