"""``python -m t2t_jax preprocess --config x --out DIR [--workers N] [--config.a.b=v ...]``.

Tokenize a config's training and validation splits once into DIR (data/preprocess.py), to be shared by runs
with ``--config.data.tokenized_dir=DIR``.  The train command does the same by itself when its tokenized
directory is missing; run this beforehand for a big corpus, on a machine with many cores.
"""

from __future__ import annotations

import argparse

from t2t_jax.cli.common import command, parse_with_config


@command
def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="t2t-preprocess", description="Tokenize a config's corpus once into ArrayRecord shards with a manifest."
    )
    parser.add_argument("--out", required=True, help="new directory for the shards, manifest and spm.model")
    parser.add_argument("--vocabulary", help="reuse this sentencepiece model instead of learning one")
    parser.add_argument("--workers", type=int, default=0, help="encoding processes (default: every core)")
    parser.add_argument("--shard-pairs", type=int, default=0, help="pairs per shard (default 100,000)")
    args, config = parse_with_config(parser, argv)
    from t2t_jax.data.preprocess import SHARD_PAIRS, preprocess

    preprocess(
        config,
        args.out,
        vocabulary=args.vocabulary,
        workers=args.workers,
        shard_pairs=args.shard_pairs or SHARD_PAIRS,
        log=lambda message: print(message, flush=True),
    )
