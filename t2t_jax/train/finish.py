"""After training: average the last checkpoints and evaluate the configured splits (the main job's end).

One command then goes from data to a report: ``final.average_last`` newest checkpoints are averaged into
``<workdir>/averaged`` (§6.1: 5 for base, 20 for big) and every split in ``final.splits`` is decoded with
``final.beam`` / ``final.alpha`` into ``<workdir>/eval/<split>.<checkpoint>.{hyp,json,md}``.

With ``final.select_on = "validation"`` the number of checkpoints averaged (``final.average_choices``) and
α (``final.alpha_choices``) are chosen first by sacreBLEU on the validation split — never on a reported
split — and the choice, with every candidate's score, goes into ``final.json`` and the log.
"""

from __future__ import annotations

import json

import jax

from t2t_jax import distributed
from t2t_jax.checkpoint.average import average_last, saved_steps
from t2t_jax.data.sources import split_text
from t2t_jax.decode.shared import decode_shared
from t2t_jax.decode.translate import load_for_inference
from t2t_jax.errors import ConfigError
from t2t_jax.evaluate.bleu import sacre_bleu
from t2t_jax.evaluate.report import write_report
from t2t_jax.workdir import Workdir

FINAL_BARRIER_SECONDS = 6 * 3600  # the others wait while process 0 averages (20 big checkpoints from a bucket)


def final_splits(config) -> list[str]:
    splits = [s.strip() for s in config.final.splits.split(",") if s.strip()]
    for split in splits:
        if split not in ("validation", "test"):
            raise ConfigError(f"final.splits: unknown split {split!r} (use validation and/or test)")
    return splits


def choices(config) -> tuple[list[int], list[float]]:
    """(checkpoint counts, alphas) the final stage chooses among: final.average_choices / alpha_choices,
    comma-separated, or the single final.average_last / final.alpha when empty or not selecting."""
    if not config.final.select_on:
        return [config.final.average_last], [config.final.alpha]

    def parse(key, kind, default):
        text = config.final[key]
        try:
            values = [kind(item) for item in text.split(",") if item.strip()] if text.strip() else [default]
        except ValueError:
            raise ConfigError(f"final.{key} = {text!r}: give comma-separated numbers, e.g. 1,3,5") from None
        if any(v < 0 for v in values):
            raise ConfigError(f"final.{key} = {text!r}: every value must be >= 0")
        return values

    if config.final.select_on != "validation":
        raise ConfigError(
            f"final.select_on = {config.final.select_on!r}: choose on 'validation' (or '' for no choice); "
            f"selecting on a split you report would overstate its score"
        )
    return parse("average_choices", int, config.final.average_last), parse("alpha_choices", float, config.final.alpha)


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
    lasts, alphas = choices(config)
    selection = None
    if config.final.select_on:
        selection = select_on_dev(config, files, lasts, alphas, log)
        last, alpha = selection["chosen"]["average_last"], selection["chosen"]["alpha"]
    else:
        last, alpha = lasts[0], alphas[0]
    # A choice always lands in <workdir>/averaged (the latest alone too), so "averaged" names what was chosen.
    checkpoint, averaged = _average(files, last, log, tag="final", keep_single=selection is not None)
    reports = {}
    if splits:
        model = load_for_inference(workdir, checkpoint)
    for split in splits:
        sources, references = split_text(config, split, log=log)
        hypotheses, stats = _decode_with(model, sources, config.final.beam, alpha, log, f"final {split}")
        name = f"{split}.{checkpoint}"
        report = (
            write_report(
                hypotheses,
                references,
                stats,
                target_lang=config.data.target_lang,
                beam=config.final.beam,
                alpha=alpha,
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
                f"alpha {alpha:g}): "
                f"sacreBLEU {report['sacrebleu']['score']:.2f} ({report['sacrebleu']['signature']}) | paper BLEU "
                f"{report['paper_bleu']['score']:.2f} | lowercased tokenized BLEU "
                f"{report['lowercase_tokenized_bleu']['score']:.2f} | chrF {report['chrf']['score']:.2f} | "
                f"length ratio {report['length_ratio']:.3f} -> {files.eval / name}.md",
                flush=True,
            )
    if lead:
        summary = {"checkpoint": checkpoint, "averaged_steps": averaged, "alpha": alpha, "reports": reports}
        if selection is not None:
            summary["selection"] = selection
        files.final.write_text(json.dumps(summary, indent=2))
    return reports


def _average(files: Workdir, wanted: int, log, tag: str, keep_single: bool = False) -> tuple[str, list[int] | None]:
    """(checkpoint name to load, steps averaged or None): process 0 averages the newest ``wanted``
    checkpoints into <workdir>/averaged (fewer when fewer exist); 0 or 1 means the latest alone, which
    ``keep_single`` copies there too. The others wait at a barrier named by ``tag`` (one name per call)."""
    steps = saved_steps(files.root)
    last = min(wanted, len(steps))
    if last < wanted:
        log(f"warning: {wanted} checkpoints asked to average but only {last} exist; averaging {last}", flush=True)
    if keep_single and steps:
        last = max(last, 1)
    averages = last > 1 or (keep_single and last == 1)
    checkpoint, averaged = ("averaged", steps[-last:]) if averages else ("latest", None)
    if averages and jax.process_index() == 0:
        average_last(files.root, last, files.averaged, log=log)
        log(f"averaged the checkpoints of steps {averaged} -> {files.averaged}", flush=True)
    distributed.barrier(f"t2t_final_averaged_{tag}", timeout_seconds=FINAL_BARRIER_SECONDS)
    return checkpoint, averaged


def select_on_dev(config, files: Workdir, lasts, alphas, log) -> dict:
    """Decode the validation split (beam final.beam) for every (checkpoints averaged, α) and return the
    candidates' sacreBLEU and the best (ties: fewer checkpoints, then the earlier α as listed)."""
    sources, references = split_text(config, "validation", log=log)
    available = len(saved_steps(files.root))
    candidates = []
    for last in sorted({max(min(k, available), 1) for k in lasts}):  # 0 and 1 both mean the latest alone
        checkpoint, averaged = _average(files, last, log, tag=f"select_{last}")
        model = load_for_inference(files.root, checkpoint)
        for alpha in alphas:
            label = f"select: validation, {last} checkpoint(s), alpha {alpha:g}"
            hypotheses, _ = _decode_with(model, sources, config.final.beam, alpha, log, label)
            score = sacre_bleu(hypotheses, references)["score"]
            candidates.append({"average_last": last, "steps": averaged or [model.step], "alpha": alpha, "bleu": score})
            log(f"select: {last} checkpoint(s) averaged, alpha {alpha:g}: validation sacreBLEU {score:.2f}", flush=True)
    chosen = max(candidates, key=lambda c: c["bleu"])  # max keeps the first of equals
    log(
        f"select: chose {chosen['average_last']} checkpoint(s), alpha {chosen['alpha']:g} "
        f"(validation sacreBLEU {chosen['bleu']:.2f}, beam {config.final.beam})",
        flush=True,
    )
    return {"on": "validation", "beam": config.final.beam, "candidates": candidates, "chosen": chosen}


def _decode_with(model, sources, beam, alpha, log, label):
    """decode_shared with a loaded model (its tokenizer, params and config)."""
    return decode_shared(
        sources, model.tokenizer, model.params, model.cfg, beam=beam, alpha=alpha, log=log, label=label
    )
