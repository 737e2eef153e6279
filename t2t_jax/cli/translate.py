"""``python -m t2t_jax translate --workdir DIR [--checkpoint latest|best|averaged|STEP] [--beam 4 --alpha 0.6
--nbest N] < input > output`` (or ``--input`` / ``--output`` files)."""

from __future__ import annotations

import argparse
import os
import sys

from t2t_jax.cli.common import (
    add_model_arguments,
    add_stop_argument,
    command,
    fail,
    model_workdir,
    quiet_libraries,
    use_compilation_cache,
)
from t2t_jax.data.text import read_lines
from t2t_jax.errors import DataError


def build_parser():
    parser = argparse.ArgumentParser(prog="t2t-translate", description="Translate text with a trained model.")
    add_model_arguments(parser)
    parser.add_argument("--beam", type=int, default=4, help="beam size; 1 = greedy")
    parser.add_argument("--alpha", type=float, default=0.6, help="GNMT length penalty exponent")
    parser.add_argument(
        "--nbest", type=int, default=1, help="hypotheses (with --sample: samples) per line, tab-separated with scores"
    )
    parser.add_argument("--sample", action="store_true", help="draw translations instead of beam search")
    parser.add_argument("--temperature", type=float, default=1.0, help="with --sample: 0 = greedy")
    parser.add_argument("--top-k", type=int, default=0, help="with --sample: only the k most likely tokens (0: all)")
    parser.add_argument("--top-p", type=float, default=1.0, help="with --sample: the nucleus of this probability")
    parser.add_argument("--seed", type=int, default=0, help="with --sample: the same seed, the same samples")
    parser.add_argument("--input", help="input file (default: stdin)")
    parser.add_argument("--output", help="output file (default: stdout)")
    parser.add_argument(
        "--tokens-per-batch",
        type=int,
        help="padded source tokens per batch (default: 2048 // beam, about 128 decoder rows a batch; "
        "with --retire-finished 4096 // beam)",
    )
    parser.add_argument(
        "--retire-finished",
        action="store_true",
        help="finished sentences leave their batch as it decodes: faster once compiled, more to compile (large inputs)",
    )
    add_stop_argument(parser)
    return parser


@command
def main(argv=None):
    args = build_parser().parse_args(argv)
    workdir = model_workdir(args)
    quiet_libraries()
    use_compilation_cache(workdir)
    from t2t_jax.decode.decoder import check_beam, check_sampling
    from t2t_jax.decode.translate import (
        DecodeOptions,
        Sampling,
        load_ensemble,
        load_for_inference,
        translate_texts,
    )
    from t2t_jax.progress import Meter

    sampling = Sampling(args.temperature, args.top_k, args.top_p, args.seed) if args.sample else None
    if sampling:  # checked before loading anything
        check_sampling(sampling.temperature, sampling.top_k, sampling.top_p)
        check_beam(args.nbest, args.nbest)
    else:
        check_beam(args.beam, args.nbest, args.stop)
    if args.tokens_per_batch is not None and args.tokens_per_batch < 1:
        fail(f"--tokens-per-batch {args.tokens_per_batch}: need at least 1")
    if args.output:
        check_writable(args.output)  # before decoding, not after: the translations would be lost
    texts = read_lines(args.input) if args.input else _stdin_lines()
    model = load_ensemble(args.ensemble) if args.ensemble else load_for_inference(args.workdir, args.checkpoint)
    meter = Meter("translate", unit="sentences")  # stderr: a live bar on a terminal, lines in a log
    options = DecodeOptions(
        args.beam,
        args.alpha,
        args.nbest,
        args.tokens_per_batch,
        sampling,
        retire_finished=args.retire_finished,
        stop=args.stop,
    )
    translations = translate_texts(
        texts,
        model.tokenizer,
        model.params,
        model.cfg,
        options,
        log=lambda m: print(m, file=sys.stderr),
        progress=meter,
    )
    meter.close()
    lines = [
        "\t".join(f"{h.text}\t{h.score:.4f}" for h in hyps) if args.nbest > 1 else hyps[0].text
        for hyps in translations.hypotheses
    ]
    output = "\n".join(lines) + ("\n" if lines else "")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(output)
        stats = translations.stats
        print(
            f"{stats.sentences} sentences in {stats.seconds:.1f}s ({describe(model)}) -> {args.output}",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(output)


def describe(model) -> str:
    return (
        f"an ensemble of {len(model.cfg)} models" if isinstance(model.cfg, tuple) else f"checkpoint step {model.step}"
    )


def _stdin_lines() -> list[str]:
    """Standard input as lines; invalid UTF-8 is the same one error as through --input."""
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise DataError(f"<stdin>:{line}: invalid UTF-8 ({error.reason} at byte {error.start})") from None


def check_writable(path) -> None:
    """An output file's folder must exist and be writable (checked before the work that fills it)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        fail(f"--output {path}: the folder {folder} does not exist")
    if os.path.isdir(path) or not os.access(folder, os.W_OK):
        fail(f"--output {path}: cannot write there")
