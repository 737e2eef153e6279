"""Training curves as a PNG (train/dev loss, dev BLEU, learning rate) from ``history.jsonl``."""

from __future__ import annotations

import io

from t2t_jax.train.history import read_history
from t2t_jax.workdir import Workdir


def plot_curves(workdir):
    """Write ``workdir/curves.png``; returns its path (None when there is no history yet)."""
    history = read_history(workdir)
    train = [h for h in history if h["split"] == "train"]
    evals = [h for h in history if h["split"] == "eval"]
    if not train:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bleu = [h for h in evals if h.get("bleu") is not None]
    panels = 3 if bleu else 2
    fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 3.6))
    axes[0].plot([h["step"] for h in train], [h["loss"] for h in train], label="train (smoothed)")
    axes[0].plot([h["step"] for h in train], [h["nll"] for h in train], label="train NLL")
    if evals:
        axes[0].plot([h["step"] for h in evals], [h["nll"] for h in evals], "o-", label="dev NLL")
    axes[0].set(xlabel="step", ylabel="loss per target token", title="loss")
    axes[0].legend()
    axes[1].plot([h["step"] for h in train], [h["lr"] for h in train])
    axes[1].set(xlabel="step", ylabel="learning rate", title="schedule")
    if bleu:
        axes[2].plot([h["step"] for h in bleu], [h["bleu"] for h in bleu], "o-")
        axes[2].set(xlabel="step", ylabel="sacreBLEU", title="dev BLEU")
    fig.tight_layout()
    path = Workdir(workdir).curves
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=100)
    path.write_bytes(png.getvalue())
    plt.close(fig)
    return path
