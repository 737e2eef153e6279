"""After training: average the last checkpoints and evaluate the configured splits (the main job's end).

One command then goes from data to a report: ``final.average_last`` newest checkpoints are averaged into
``<workdir>/averaged`` (§6.1: 5 for base, 20 for big) and every split in ``final.splits`` is decoded with
``final.beam`` / ``final.alpha`` into ``<workdir>/eval/<split>.<checkpoint>.{hyp,json,md}``.
"""

from __future__ import annotations

import dataclasses
import json

import jax

from t2t_jax.checkpoint.average import average_last, saved_steps
from t2t_jax.data.sources import split_text
from t2t_jax.decode.translate import DecodeStats, load_for_inference, translate_texts
from t2t_jax.errors import ConfigError
from t2t_jax.evaluate.report import write_report
from t2t_jax.progress import Meter
from t2t_jax.train import distributed
from t2t_jax.workdir import Workdir

FINAL_BARRIER_SECONDS = 6 * 3600  # the others wait while process 0 averages (20 big checkpoints from a bucket)


def final_splits(config) -> list[str]:
    splits = [s.strip() for s in config.final.splits.split(",") if s.strip()]
    for split in splits:
        if split not in ("validation", "test"):
            raise ConfigError(f"final.splits: unknown split {split!r} (use validation and/or test)")
    return splits


def finish(config, workdir, log=print) -> dict:
    """Average, evaluate, and write ``<workdir>/final.json``; returns {split: report}.

    Every process of a multi-process run calls it: process 0 averages (reading and writing by itself, see
    checkpoint/params.py) while the others wait at one barrier; then each process decodes an equal share of
    every split, the hypotheses are gathered, and process 0 writes the reports once."""
    files = Workdir(workdir)
    workdir = files.root
    lead = jax.process_index() == 0
    log = log if lead else (lambda *a, **k: None)
    splits = final_splits(config)
    last = min(config.final.average_last, len(saved_steps(workdir)))
    if last < config.final.average_last:
        log(
            f"warning: final.average_last = {config.final.average_last} but only {last} checkpoint(s) exist; "
            f"averaging {last}",
            flush=True,
        )
    checkpoint, averaged = ("averaged", saved_steps(workdir)[-last:]) if last > 1 else ("latest", None)
    if last > 1 and lead:
        average_last(workdir, last, files.averaged, log=log)
        log(f"averaged the checkpoints of steps {averaged} -> {files.averaged}", flush=True)
    distributed.barrier("t2t_final_averaged", timeout_seconds=FINAL_BARRIER_SECONDS)
    reports = {}
    if splits:
        model = load_for_inference(workdir, checkpoint)
    for split in splits:
        sources, references = split_text(config, split, log=log)
        hypotheses, stats = decode_shared(
            sources,
            model.tokenizer,
            model.params,
            model.cfg,
            beam=config.final.beam,
            alpha=config.final.alpha,
            log=log,
            label=f"final {split}",
        )
        name = f"{split}.{checkpoint}"
        report = (
            write_report(
                hypotheses,
                references,
                stats,
                target_lang=config.data.target_lang,
                beam=config.final.beam,
                alpha=config.final.alpha,
                out_dir=files.eval,
                name=name,
            )
            if lead
            else None
        )
        reports[split] = report
        if lead:
            log(
                f"final {split} ({checkpoint}, step {model.step}, beam {config.final.beam}, "
                f"alpha {config.final.alpha}): "
                f"sacreBLEU {report['sacrebleu']['score']:.2f} ({report['sacrebleu']['signature']}) | paper BLEU "
                f"{report['paper_bleu']['score']:.2f} | chrF {report['chrf']['score']:.2f} | length ratio "
                f"{report['length_ratio']:.3f} -> {files.eval / name}.md",
                flush=True,
            )
    if lead:
        summary = {"checkpoint": checkpoint, "averaged_steps": averaged, "reports": reports}
        files.final.write_text(json.dumps(summary, indent=2))
    return reports


def decode_shared(sources, tokenizer, params, cfg, *, beam, alpha=0.6, log=print, label="decode"):
    """(hypotheses in input order, decode stats), identical on every process: process p of N decodes
    sentences p, p+N, ... on its own devices and the hypotheses are gathered. ``log`` shows the progress of
    this process's share (lines every 10 s: a training log is a file)."""
    count, index = jax.process_count(), jax.process_index()
    share = f" (this process's share, 1/{count})" if count > 1 else ""
    with Meter(label + share, unit="sentences", printer=log) as meter:
        mine = translate_texts(
            sources[index::count], tokenizer, params, cfg, beam=beam, alpha=alpha, log=log, progress=meter
        )
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
