"""After training: average the last checkpoints and evaluate the configured splits (the main job's end).

One command then goes from data to a report: ``final.average_last`` newest checkpoints are averaged into
``<workdir>/averaged`` (§6.1: 5 for base, 20 for big) and every split in ``final.splits`` is decoded with
``final.beam`` / ``final.alpha`` into ``<workdir>/eval/<split>.<checkpoint>.{hyp,json,md}``.
"""
from __future__ import annotations

import json
import pathlib

from t2t_jax.checkpoint.average import average_last, saved_steps
from t2t_jax.data.sources import split_text
from t2t_jax.decode.translate import load_for_inference
from t2t_jax.evaluate.report import evaluate_texts
from t2t_jax.model.config import ConfigError


def final_splits(config) -> list[str]:
    splits = [s.strip() for s in config.final.splits.split(",") if s.strip()]
    for split in splits:
        if split not in ("validation", "test"):
            raise ConfigError(f"final.splits: unknown split {split!r} (use validation and/or test)")
    return splits


def finish(config, workdir, log=print) -> dict:
    """Average, evaluate, and write ``<workdir>/final.json``; returns {split: report}."""
    workdir = pathlib.Path(workdir)
    splits = final_splits(config)
    checkpoint, averaged = "latest", None
    last = min(config.final.average_last, len(saved_steps(workdir)))
    if last < config.final.average_last:
        log(f"warning: final.average_last = {config.final.average_last} but only {last} checkpoint(s) exist; "
            f"averaging {last}", flush=True)
    if last > 1:
        averaged = average_last(workdir, last, workdir / "averaged", log=lambda *_: None)
        checkpoint = "averaged"
        log(f"averaged the checkpoints of steps {averaged} -> {workdir / 'averaged'}", flush=True)
    reports = {}
    if splits:
        cfg, params, tokenizer, _, step = load_for_inference(workdir, checkpoint)
    for split in splits:
        sources, references = split_text(config, split, log=log)
        report = evaluate_texts(sources, references, tokenizer, params, cfg, target_lang=config.data.target_lang,
                                beam=config.final.beam, alpha=config.final.alpha, out_dir=workdir / "eval",
                                name=f"{split}.{checkpoint}", log=log)
        reports[split] = report
        log(f"final {split} ({checkpoint}, step {step}, beam {config.final.beam}, alpha {config.final.alpha}): "
            f"sacreBLEU {report['sacrebleu']['score']:.2f} ({report['sacrebleu']['signature']}) | paper BLEU "
            f"{report['paper_bleu']['score']:.2f} | chrF {report['chrf']['score']:.2f} | length ratio "
            f"{report['length_ratio']:.3f} -> {workdir / 'eval' / (split + '.' + checkpoint)}.md", flush=True)
    summary = {"checkpoint": checkpoint, "averaged_steps": averaged, "reports": reports}
    (workdir / "final.json").write_text(json.dumps(summary, indent=2))
    return reports
