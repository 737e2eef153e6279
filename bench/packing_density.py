"""Real tokens per packed training batch (how full the rows are), on a real corpus; prints JSON.

    python bench/packing_density.py --prefix ../shared/data/europarl_ende_20k/train --vocab 8000 \
        --rows 128 --length 256

Why: a recipe's ``data.batch_tokens`` counts token *slots* (rows x length); §5.1's ~25k tokens per side are
real tokens, so the slots per batch should be the target divided by this fill.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.machine import recorded  # noqa: E402
from t2t_jax.data.pipeline import PackedTrainBatches  # noqa: E402
from t2t_jax.data.text import read_parallel  # noqa: E402
from t2t_jax.data.tokenizer import train_tokenizer  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefix", required=True, help="PATH for PATH.en / PATH.de")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--rows", type=int, default=128)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--batches", type=int, default=30)
    args = parser.parse_args()
    sources, targets = read_parallel(f"{args.prefix}.en", f"{args.prefix}.de", training=True, log=lambda *_: None)
    tokenizer = train_tokenizer(sources + targets, vocab_size=args.vocab)
    src, tgt = tokenizer.encode_batch(sources), tokenizer.encode_batch(targets)
    keep = [i for i in range(len(src)) if len(src[i]) <= args.length and len(tgt[i]) <= args.length]
    batches = PackedTrainBatches(
        [src[i] for i in keep], [tgt[i] for i in keep], rows=args.rows, length=args.length, seed=0
    )
    counts = np.asarray(
        [[(b["inputs"] != 0).sum(), (b["targets"] != 0).sum()] for b in (next(batches) for _ in range(args.batches))],
        np.float64,
    )
    slots = args.rows * args.length
    print(
        json.dumps(
            recorded(
                {
                    "prefix": args.prefix,
                    "vocab": args.vocab,
                    "pairs": len(keep),
                    "slots_per_side": slots,
                    "source_tokens_per_batch": round(float(counts[:, 0].mean())),
                    "target_tokens_per_batch": round(float(counts[:, 1].mean())),
                    "source_fill": round(float(counts[:, 0].mean()) / slots, 3),
                    "target_fill": round(float(counts[:, 1].mean()) / slots, 3),
                }
            )
        )
    )


if __name__ == "__main__":
    main()
