"""Score a test set's hypotheses (sacreBLEU, paper BLEU, lowercased tokenized BLEU, chrF); write a report."""

from __future__ import annotations

import json

from t2t_jax.decode.translate import DecodeStats
from t2t_jax.evaluate.bleu import chrf, lowercase_tokenized_bleu, paper_bleu, sacre_bleu
from t2t_jax.workdir import workdir_path


def write_report(
    hypotheses, references, stats: DecodeStats, *, target_lang, beam, alpha, out_dir, name, stop="exact"
) -> dict:
    """Score ``hypotheses`` and write ``<out_dir>/<name>.{hyp,json,md}``; returns the report (``beam``, ``alpha``,
    ``stop``: the search that made them)."""
    out_dir = workdir_path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.hyp").write_text("\n".join(hypotheses) + "\n", encoding="utf-8")
    sacre = sacre_bleu(hypotheses, references)
    report = {
        "name": name,
        "sentences": len(hypotheses),
        "beam": beam,
        "alpha": alpha,
        "stop": stop,
        "sacrebleu": sacre,
        "paper_bleu": paper_bleu(hypotheses, references, target_lang),
        "lowercase_tokenized_bleu": lowercase_tokenized_bleu(hypotheses, references, target_lang),
        "chrf": chrf(hypotheses, references),
        "length_ratio": sacre["sys_len"] / max(sacre["ref_len"], 1),
        "decode": {
            "seconds": stats.seconds,
            "sentences_per_s": stats.sentences / max(stats.seconds, 1e-9),
            "target_tokens_per_s": stats.tokens / max(stats.seconds, 1e-9),
        },
    }
    (out_dir / f"{name}.json").write_text(json.dumps(report, indent=2))
    (out_dir / f"{name}.md").write_text(markdown(report))
    return report


def markdown(report: dict) -> str:
    return "\n".join(
        [
            f"# {report['name']}: {report['sentences']} sentences, beam {report['beam']}, alpha {report['alpha']}"
            + (f", stop {report['stop']}" if report["stop"] != "exact" else ""),
            "",
            "| metric | score |",
            "|---|---|",
            f"| sacreBLEU (cased, 13a) | {report['sacrebleu']['score']:.2f} |",
            f"| paper BLEU (Moses tok. + ##AT## splits) | {report['paper_bleu']['score']:.2f} |",
            f"| lowercased tokenized BLEU (published Multi30k results' protocol) | "
            f"{report['lowercase_tokenized_bleu']['score']:.2f} |",
            f"| chrF | {report['chrf']['score']:.2f} |",
            f"| length ratio | {report['length_ratio']:.3f} |",
            f"| decode sentences/s | {report['decode']['sentences_per_s']:.1f} |",
            "",
            f"sacreBLEU signature: `{report['sacrebleu']['signature']}`",
            "",
        ]
    )
