"""``python -m t2t_jax.translate --workdir DIR [--checkpoint latest|best|averaged|STEP] [--beam 4 --alpha 0.6
--nbest N] < input > output`` (or ``--input`` / ``--output`` files)."""
from __future__ import annotations

import argparse
import sys

from t2t_jax.cli.common import fail, quiet_libraries, use_compilation_cache
from t2t_jax.data.text import DataError, read_lines
from t2t_jax.model.config import ConfigError


def build_parser():
    parser = argparse.ArgumentParser(prog="t2t-translate", description="Translate text with a trained model.")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--checkpoint", default="latest", help="latest, best, averaged or a step number")
    parser.add_argument("--beam", type=int, default=4, help="beam size; 0 = greedy")
    parser.add_argument("--alpha", type=float, default=0.6, help="GNMT length penalty exponent")
    parser.add_argument("--nbest", type=int, default=1, help="hypotheses per line (tab-separated with scores)")
    parser.add_argument("--input", help="input file (default: stdin)")
    parser.add_argument("--output", help="output file (default: stdout)")
    parser.add_argument("--tokens-per-batch", type=int, default=2048)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    quiet_libraries()
    use_compilation_cache(args.workdir)
    from t2t_jax.decode.translate import load_for_inference, translate_texts

    try:
        texts = read_lines(args.input) if args.input else sys.stdin.read().splitlines()
        cfg, params, tokenizer, _, step = load_for_inference(args.workdir, args.checkpoint)
        show = (lambda done, total: print(f"\rtranslated {done}/{total}", end="", file=sys.stderr, flush=True)) \
            if args.input else None
        results, stats = translate_texts(texts, tokenizer, params, cfg, beam=args.beam, alpha=args.alpha,
                                         nbest=args.nbest, tokens_per_batch=args.tokens_per_batch,
                                         log=lambda m: print(m, file=sys.stderr), progress=show)
    except (ConfigError, DataError) as error:
        fail(str(error))
    lines = ["\t".join(f"{text}\t{score:.4f}" for text, score in hyps) if args.nbest > 1 else hyps[0][0]
             for hyps in results]
    output = "\n".join(lines) + ("\n" if lines else "")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(output)
        print(f"\n{stats['sentences']} sentences in {stats['seconds']:.1f}s (checkpoint step {step}) -> "
              f"{args.output}", file=sys.stderr)
    else:
        sys.stdout.write(output)


if __name__ == "__main__":
    main()
