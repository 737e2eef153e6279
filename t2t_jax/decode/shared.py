"""Decoding across the processes of a multi-host run: each decodes its share, every process gets all the
hypotheses (the dev-BLEU step of training and the final stage use it)."""

from __future__ import annotations

import dataclasses

import jax

from t2t_jax import distributed
from t2t_jax.decode.translate import DecodeOptions, DecodeStats, translate_texts
from t2t_jax.progress import Meter


def decode_shared(sources, tokenizer, params, cfg, *, beam, alpha=0.6, log=print, label="decode"):
    """(hypotheses in input order, decode stats), identical on every process: process p of N decodes
    sentences p, p+N, ... on its own devices and the hypotheses are gathered. ``log`` shows the progress of
    this process's share (lines every 10 s: a training log is a file)."""
    count, index = jax.process_count(), jax.process_index()
    share = f" (this process's share, 1/{count})" if count > 1 else ""
    with Meter(label + share, unit="sentences", printer=log) as meter:
        options = DecodeOptions(beam=beam, alpha=alpha)
        mine = translate_texts(sources[index::count], tokenizer, params, cfg, options, log=log, progress=meter)
    shares = distributed.allgather_json({"hypotheses": mine.best, "stats": dataclasses.asdict(mine.stats)})
    hypotheses = [""] * len(sources)
    for p, share in enumerate(shares):
        hypotheses[p::count] = share["hypotheses"]
    stats = DecodeStats(
        sentences=sum(s["stats"]["sentences"] for s in shares),
        tokens=sum(s["stats"]["tokens"] for s in shares),
        seconds=max(s["stats"]["seconds"] for s in shares),
    )  # the processes decode side by side
    return hypotheses, stats
