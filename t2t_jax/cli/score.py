"""``python -m t2t_jax score --workdir DIR [--checkpoint averaged] --src F --tgt F [--per-token] [--output F]``.

Prints one line per pair: the total log-probability of the target given the source, then the mean per token
(EOS included), tab-separated; ``--per-token`` appends every token's log-probability.
"""

from __future__ import annotations

import argparse
import sys

from t2t_jax.cli.common import command, fail, quiet_libraries, use_compilation_cache
from t2t_jax.cli.translate import check_writable
from t2t_jax.data.text import read_lines


def build_parser():
    parser = argparse.ArgumentParser(
        prog="t2t-score", description="Score given translations: log P(target | source) under a trained model."
    )
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--checkpoint", default="latest", help="latest, best, averaged or a step number")
    parser.add_argument("--src", required=True, help="source sentences, one per line")
    parser.add_argument("--tgt", required=True, help="their translations to score, line-aligned with --src")
    parser.add_argument("--per-token", action="store_true", help="also print each target token's log-probability")
    parser.add_argument("--output", help="output file (default: stdout)")
    parser.add_argument("--tokens-per-batch", type=int, help="padded tokens per batch (default 512)")
    return parser


def format_score(score, per_token: bool) -> str:
    fields = [f"{score.total:.4f}", f"{score.normalized:.4f}"]
    if per_token:
        fields.append(" ".join(f"{value:.4f}" for value in score.per_token))
    return "\t".join(fields)


@command
def main(argv=None):
    args = build_parser().parse_args(argv)
    quiet_libraries()
    use_compilation_cache(args.workdir)
    from t2t_jax.decode.score import SCORE_TOKENS_PER_BATCH, score_texts
    from t2t_jax.decode.translate import load_for_inference
    from t2t_jax.progress import Meter

    if args.tokens_per_batch is not None and args.tokens_per_batch < 1:
        fail(f"--tokens-per-batch {args.tokens_per_batch}: need at least 1")
    if args.output:
        check_writable(args.output)
    sources, targets = read_lines(args.src), read_lines(args.tgt)
    model = load_for_inference(args.workdir, args.checkpoint)
    meter = Meter("score", unit="pairs")
    scores = score_texts(
        sources,
        targets,
        model.tokenizer,
        model.params,
        model.cfg,
        per_token=args.per_token,
        tokens_per_batch=args.tokens_per_batch or SCORE_TOKENS_PER_BATCH,
        progress=meter,
    )
    meter.close()
    output = "".join(format_score(score, args.per_token) + "\n" for score in scores)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(output)
        print(f"{len(scores)} pairs scored (checkpoint step {model.step}) -> {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(output)
