"""Decoding a real test set with a trained workdir: first run (compiling each batch shape) and a second,
compiled run in the same process. Prints JSON.

    python bench/decode_real.py --workdir W --input FILE [--checkpoint averaged] [--beam 4] [--single-loop]

``--single-loop`` keeps every self-attention cache at full size in one loop (decode_cache.PHASE_MIN_BYTES
raised), the comparison for the phased caches. Real outputs end early, unlike bench/decode.py's random
weights, so this shows what phases and compile time mean for an evaluation.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bench.machine import recorded  # noqa: E402
from t2t_jax.data.text import read_lines  # noqa: E402
from t2t_jax.decode.translate import DecodeOptions, load_for_inference, translate_texts  # noqa: E402
from t2t_jax.model import decode_cache  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--checkpoint", default="averaged")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--single-loop", action="store_true", help="no cache phases (full-size caches)")
    args = parser.parse_args()
    if args.single_loop:
        decode_cache.PHASE_MIN_BYTES = float("inf")
    model = load_for_inference(args.workdir, args.checkpoint)
    texts = read_lines(args.input)
    report = {
        "workdir": args.workdir,
        "checkpoint": args.checkpoint,
        "step": model.step,
        "dtype": model.cfg.dtype,
        "sentences": len(texts),
        "beam": args.beam,
        "single_loop": args.single_loop,
        "runs": [],
    }
    outputs = []
    for _ in range(2):
        start = time.perf_counter()
        options = DecodeOptions(beam=args.beam)
        translations = translate_texts(texts, model.tokenizer, model.params, model.cfg, options, log=lambda *_: None)
        report["runs"].append({"seconds": time.perf_counter() - start, "target_tokens": translations.stats.tokens})
        outputs.append(translations.best)
    report["runs_agree"] = outputs[0] == outputs[1]
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
