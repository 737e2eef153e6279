"""``t2t-visualize --workdir DIR --sentence "..." [--checkpoint ...] [--out DIR]`` or ``--curves``.

``--curves`` draws ``curves.png`` from ``history.jsonl`` now, also while the run trains or after it was
killed (training redraws it at every evaluation). ``--sentence`` translates the sentence (greedy), then
writes one PNG per layer and attention kind (encoder self, decoder self, decoder cross) with a panel per
head, as in the paper's Figures 3-5. Maps always come from the explicit dot-product path, also for models
trained with the fused kernel.
"""

from __future__ import annotations

import argparse
import pathlib

import numpy as np

from t2t_jax.cli.common import command, fail, quiet_libraries
from t2t_jax.model.config import ATTENTION_KINDS
from t2t_jax.workdir import Workdir

KINDS = {
    ("encoder", "self_attn"): "encoder_self",
    ("decoder", "self_attn"): "decoder_self",
    ("decoder", "cross_attn"): "decoder_cross",
}


def attention_maps(params, cfg, inputs, targets):
    """{(kind, layer): weights [heads, q, k]} from one teacher-forced forward pass."""
    from flax.traverse_util import flatten_dict

    from t2t_jax.model import Transformer

    _, state = Transformer(cfg).apply({"params": params}, inputs, targets, mutable=["intermediates"])
    maps = {}
    for path, value in flatten_dict(state["intermediates"]).items():
        side, layer, sublayer = path[0], path[1], path[2]
        maps[(KINDS[(side, sublayer)], int(layer.split("_")[1]))] = np.asarray(value[0])[0]
    return maps


def plot(weights, row_labels, col_labels, title, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    heads = weights.shape[0]
    cols = min(heads, 4)
    rows = -(-heads // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.2 * rows), squeeze=False)
    for h, ax in enumerate(axes.flat):
        if h >= heads:
            ax.axis("off")
            continue
        ax.imshow(weights[h], cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_title(f"head {h}", fontsize=8)
        ax.set_xticks(range(len(col_labels)), col_labels, rotation=90, fontsize=6)
        ax.set_yticks(range(len(row_labels)), row_labels, fontsize=6)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw_curves(workdir) -> None:
    from t2t_jax.train.curves import plot_curves

    path = plot_curves(workdir) if Workdir(workdir).history.exists() else None
    if path is None:
        fail(f"no training entries in {Workdir(workdir).history} yet (the first comes at step train.log_every)")
    print(f"wrote {path}")


@command
def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="t2t-visualize", description="Attention maps of one sentence, or the training curves, as PNGs."
    )
    parser.add_argument("--workdir", required=True)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--sentence", help="draw the attention maps of this sentence's greedy translation")
    what.add_argument("--curves", action="store_true", help="draw WORKDIR/curves.png from history.jsonl")
    parser.add_argument("--checkpoint", default="latest")
    parser.add_argument("--out", help="output directory (default: WORKDIR/attention)")
    args = parser.parse_args(argv)
    if args.curves:
        draw_curves(args.workdir)
        return
    quiet_libraries()
    from t2t_jax.decode.decoder import translate_ids
    from t2t_jax.decode.translate import load_for_inference

    model = load_for_inference(args.workdir, args.checkpoint)
    cfg, params, tokenizer = model.cfg, model.params, model.tokenizer
    undrawable = sorted(
        {cfg.attention_function(kind) for kind in ATTENTION_KINDS if cfg.attention_variant(kind).dot_scale is None}
    )
    if undrawable:
        fail(f"attention maps are drawn for softmax(q·kᵀ) variants (variants.py: dot_scale), not {undrawable}")
    inputs = tokenizer.encode(args.sentence)[None]
    output = np.asarray(translate_ids(params, inputs, cfg=cfg, beam=1)[0])[0, 0]
    output = output[: list(output).index(cfg.eos_id) + 1] if cfg.eos_id in output else output
    targets = output[None].astype(np.int32)
    pieces = lambda ids: [tokenizer.processor.id_to_piece(int(i)) for i in ids]  # noqa: E731
    src, tgt = pieces(inputs[0]), pieces(targets[0])
    decoder_in = ["<s>"] + tgt[:-1]
    out_dir = pathlib.Path(args.out or Workdir(args.workdir).attention)
    out_dir.mkdir(parents=True, exist_ok=True)
    labels = {"encoder_self": (src, src), "decoder_self": (decoder_in, decoder_in), "decoder_cross": (decoder_in, src)}
    written = []
    for (kind, layer), weights in sorted(attention_maps(params, cfg, inputs, targets).items()):
        path = out_dir / f"{kind}_layer{layer}.png"
        plot(weights, *labels[kind], f"{kind.replace('_', ' ')} attention, layer {layer}", path)
        written.append(path)
    print(f"translation: {tokenizer.decode(targets[0])}")
    print(f"wrote {len(written)} PNGs to {out_dir}")
