"""The Table 3 report: our rows beside the paper's, whether each effect goes the paper's way, and a chart.

A row's effect is its difference from the base row (the mean of the base seeds); the spread of the base
seeds is the noise: an effect no larger than that says nothing about direction. The paper's effect is the
same difference in its own Table 3 (dev BLEU higher is better, dev PPL lower is better).
"""

from __future__ import annotations

import io
import statistics


def is_base(row: str) -> bool:
    """The base row or one of its extra seeds (``base_seed1``, ...)."""
    return row == "base" or row.startswith("base_seed")


def base_reference(results: list[dict]) -> dict:
    """Mean dev BLEU / PPL of the base seeds and their spread (max - min; 0 with one seed)."""
    seeds = [r for r in results if is_base(r["row"])]
    out = {"seeds": len(seeds)}
    for key in ("dev_bleu", "dev_ppl"):
        values = [r[key] for r in seeds if r.get(key) is not None]
        out[key] = statistics.fmean(values) if values else None
        out[key + "_noise"] = max(values) - min(values) if len(values) > 1 else 0.0
    return out


def direction(ours: float | None, paper: float | None, noise: float) -> str:
    """'yes' / 'no' (same or opposite sign as the paper's effect), 'noise' (within the base seeds' spread),
    '-' (nothing to compare)."""
    if ours is None or paper is None:
        return "-"
    if abs(ours) <= noise:
        return "noise"
    if paper == 0:
        return "paper ±0"
    return "yes" if (ours > 0) == (paper > 0) else "no"


def effects(results: list[dict], paper: dict) -> list[dict]:
    """Each result with its effect (ours and the paper's) on dev BLEU and PPL and the agreement verdicts."""
    ref = base_reference(results)
    p_base = paper.get("base", (None, None, None))
    rows = []
    for r in results:
        p_row = paper.get(r.get("paper_row")) if r.get("paper_row") else None
        row = dict(r)
        for key, index in (("dev_bleu", 1), ("dev_ppl", 0)):
            ours = None if r.get(key) is None or ref[key] is None else r[key] - ref[key]
            theirs = None if p_row is None or p_row[index] is None else p_row[index] - p_base[index]
            row[f"{key}_effect"], row[f"paper_{key}_effect"] = ours, theirs
            row[f"{key}_agrees"] = "-" if is_base(r["row"]) else direction(ours, theirs, ref[key + "_noise"])
        rows.append(row)
    return rows


def _fmt(x, spec):
    return "-" if x is None else format(x, spec)


def markdown(results: list[dict], paper: dict, command: str, note: str = "", speeds: dict | None = None) -> str:
    """The table as markdown. ``speeds``: a bench/table3_speed.py report; its relative step times (all rows timed
    in one run on one machine) replace the tokens/s each row trained at (which compare machines, not rows)."""
    ref = base_reference(results)
    relative = {row: entry["relative_step_time"] for row, entry in (speeds or {}).get("rows", {}).items()}

    def speed(row: dict) -> str:
        if not speeds:
            return _fmt(row["tokens_per_s"], ",.0f")
        value = relative.get("base" if is_base(row["row"]) else row["row"])
        return "-" if value is None else f"{value:.2f}"

    speed_note = []
    if speeds:
        cpu = speeds["machine"]["cpu"]
        speed_note = [
            f"Step time: each row's training step over the base's, all timed in one run on one machine "
            f"({cpu['cores']} cores of an {cpu['model']}, bf16-relevant flags: {', '.join(cpu['flags']) or 'none'}; "
            f"`{speeds['command']}`, {speeds['date']}).",
            "",
        ]
    lines = [
        f"Command: `{command}`",
        "",
        *([note, ""] if note else []),
        *speed_note,
        f"Effects are differences from the base row's mean over {ref['seeds']} seed(s); the base seeds differ by "
        f"{_fmt(ref['dev_bleu_noise'], '.2f')} BLEU / {_fmt(ref['dev_ppl_noise'], '.3f')} PPL, and an effect "
        "no larger than that is marked 'noise'. 'agrees': does our effect go the way of the paper's (BLEU up "
        "is better, PPL down is better)?",
        "",
        f"| row | changes | params (M) | dev PPL | dev BLEU | {'step time vs base' if speeds else 'tokens/s'} | "
        "paper row | paper PPL | paper BLEU | "
        "paper params | ΔBLEU ours / paper | ΔPPL ours / paper | agrees (BLEU, PPL) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in effects(results, paper):
        p_ppl, p_bleu, p_params = paper.get(r.get("paper_row") or "", (None, None, None))
        lines.append(
            f"| {r['row']} | {r['changes']} | {r['params_m']:.2f} | {r['dev_ppl']:.2f} | "
            f"{_fmt(r['dev_bleu'], '.2f')} | {speed(r)} | {r.get('paper_row') or '-'} | "
            f"{_fmt(p_ppl, '.2f')} | {_fmt(p_bleu, '.1f')} | {_fmt(p_params, 'd')} | "
            f"{_fmt(r['dev_bleu_effect'], '+.2f')} / {_fmt(r['paper_dev_bleu_effect'], '+.1f')} | "
            f"{_fmt(r['dev_ppl_effect'], '+.2f')} / {_fmt(r['paper_dev_ppl_effect'], '+.2f')} | "
            f"{r['dev_bleu_agrees']}, {r['dev_ppl_agrees']} |"
        )
    return "\n".join(lines) + "\n"


def chart_png(results: list[dict], paper: dict) -> bytes:
    """Two panels of horizontal bars, one bar pair per row: our effect and the paper's on dev BLEU and dev
    PPL, with the base seeds' spread shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in effects(results, paper) if not is_base(r["row"])]
    ref = base_reference(results)
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.35 * max(len(rows), 4) + 1.5), sharey=True)
    positions = range(len(rows))
    for axis, key, title in (
        (axes[0], "dev_bleu", "Δ dev BLEU (higher is better)"),
        (axes[1], "dev_ppl", "Δ dev PPL (lower is better)"),
    ):
        noise = ref[key + "_noise"]
        if noise:
            axis.axvspan(-noise, noise, color="0.9", label="base seeds' spread")
        axis.barh([p + 0.2 for p in positions], [r[f"{key}_effect"] or 0 for r in rows], 0.4, label="ours (Multi30k)")
        axis.barh(
            [p - 0.2 for p in positions], [r[f"paper_{key}_effect"] or 0 for r in rows], 0.4, label="paper (WMT14)"
        )
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set(title=title)
        axis.legend(fontsize=8, loc="lower right")
    axes[0].set_yticks(list(positions), [r["row"] for r in rows])
    axes[0].invert_yaxis()
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=100)
    plt.close(fig)
    return png.getvalue()
