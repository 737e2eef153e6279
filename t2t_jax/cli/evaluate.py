"""``python -m t2t_jax evaluate --workdir DIR (--src FILE --ref FILE | --split test) [--checkpoint ...]``."""

from __future__ import annotations

import argparse
import json
import pathlib

import ml_collections

from t2t_jax.cli.common import add_stop_argument, command, quiet_libraries, use_compilation_cache
from t2t_jax.data.text import read_parallel
from t2t_jax.errors import ConfigError
from t2t_jax.workdir import Workdir


@command
def main(argv=None):
    parser = argparse.ArgumentParser(prog="t2t-evaluate", description="Decode a test set and report BLEU.")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--checkpoint", default="latest", help="latest, best, averaged or a step number")
    parser.add_argument("--src", help="source file (with --ref)")
    parser.add_argument("--ref", help="reference file (with --src)")
    parser.add_argument("--split", choices=["validation", "test"], help="a split of the run's dataset instead")
    parser.add_argument("--beam", type=int, default=4, help="beam size; 1 = greedy")
    parser.add_argument("--alpha", type=float, default=0.6)
    add_stop_argument(parser)
    parser.add_argument("--name", help="report name (default: the split or the source file name)")
    args = parser.parse_args(argv)
    if bool(args.src) != bool(args.ref) or bool(args.src) == bool(args.split):
        parser.error("give either --src and --ref, or --split")
    quiet_libraries()
    use_compilation_cache(args.workdir)
    from t2t_jax.data.sources import split_text
    from t2t_jax.decode.decoder import check_beam
    from t2t_jax.decode.translate import DecodeOptions, load_for_inference, translate_texts
    from t2t_jax.evaluate.report import write_report
    from t2t_jax.progress import Meter

    check_beam(args.beam, 1, args.stop)  # before loading anything
    files = Workdir(args.workdir)
    if not files.config.exists():
        raise ConfigError(f"{files.root} is not a t2t_jax workdir (no {files.config.name})")
    config = json.loads(files.config.read_text())
    if args.split:  # the test data first: a bad file is found before the model is loaded
        sources, references = split_text(ml_collections.ConfigDict(config), args.split)
    else:
        sources, references = read_parallel(args.src, args.ref, training=False)
    model = load_for_inference(args.workdir, args.checkpoint)
    name = args.name or args.split or pathlib.Path(args.src).name
    options = DecodeOptions(beam=args.beam, alpha=args.alpha, stop=args.stop)
    meter = Meter(f"evaluate {name}", unit="sentences")
    translations = translate_texts(sources, model.tokenizer, model.params, model.cfg, options, progress=meter)
    report = write_report(
        translations.best,
        references,
        translations.stats,
        target_lang=config["data"]["target_lang"],
        beam=args.beam,
        alpha=args.alpha,
        stop=args.stop,
        out_dir=Workdir(args.workdir).eval,
        name=f"{name}.{args.checkpoint}",
    )
    print(
        f"checkpoint {args.checkpoint} (step {model.step}) on {name}: sacreBLEU {report['sacrebleu']['score']:.2f} "
        f"({report['sacrebleu']['signature']}) | paper BLEU {report['paper_bleu']['score']:.2f} | "
        f"lowercased tokenized BLEU {report['lowercase_tokenized_bleu']['score']:.2f} | "
        f"chrF {report['chrf']['score']:.2f} | length ratio {report['length_ratio']:.3f} | "
        f"{report['decode']['sentences_per_s']:.1f} sentences/s"
    )
    print(f"report: {pathlib.Path(args.workdir) / 'eval'}/{name}.{args.checkpoint}.{{json,md,hyp}}")
