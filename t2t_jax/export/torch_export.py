"""``--format torch``: the state_dict of t2t_jax/export/torch_model.py plus that file, loadable with torch.load."""

from __future__ import annotations

import pathlib
import shutil

import numpy as np

from t2t_jax.export.support import check_exportable
from t2t_jax.model.config import ModelConfig
from t2t_jax.workdir import Workdir

MODULE_FILE = pathlib.Path(__file__).with_name("torch_model.py")


def to_torch_state(params, cfg: ModelConfig) -> dict[str, np.ndarray]:
    out = {"embed.weight": np.asarray(params["embed"]["embedding"])}
    if "logits_bias" in params["embed"]:
        out["logits_bias"] = np.asarray(params["embed"]["logits_bias"])
    for side, layers in (("encoder", cfg.encoder_layers), ("decoder", cfg.decoder_layers)):
        tree = params[side]
        if "pos_embed" in tree:
            out[f"{side}.pos_embed.weight"] = np.asarray(tree["pos_embed"]["embedding"])
        if "ln_final" in tree:
            out[f"{side}.ln_final.weight"] = np.asarray(tree["ln_final"]["scale"])
            out[f"{side}.ln_final.bias"] = np.asarray(tree["ln_final"]["bias"])
        for i in range(layers):
            layer, pre = tree[f"layer_{i}"], f"{side}.layers.{i}"
            for name, sub in layer.items():
                if name.startswith("ln_"):
                    out[f"{pre}.norms.{name}.weight"] = np.asarray(sub["scale"])
                    out[f"{pre}.norms.{name}.bias"] = np.asarray(sub["bias"])
                elif name == "ffn":
                    for dense in ("wi", "wo"):
                        out[f"{pre}.ffn.{dense}.weight"] = np.asarray(sub[dense]["kernel"]).T
                        out[f"{pre}.ffn.{dense}.bias"] = np.asarray(sub[dense]["bias"])
                else:  # self_attn / cross_attn
                    for proj in ("query", "key", "value"):
                        kernel = np.asarray(sub[proj]["kernel"])
                        out[f"{pre}.{name}.{proj}.weight"] = kernel.reshape(kernel.shape[0], -1).T
                        if "bias" in sub[proj]:
                            out[f"{pre}.{name}.{proj}.bias"] = np.asarray(sub[proj]["bias"]).reshape(-1)
                    kernel = np.asarray(sub["out"]["kernel"])
                    out[f"{pre}.{name}.out.weight"] = kernel.reshape(-1, kernel.shape[-1]).T
                    if "bias" in sub["out"]:
                        out[f"{pre}.{name}.out.bias"] = np.asarray(sub["out"]["bias"])
    return {k: np.ascontiguousarray(v, np.float32) for k, v in out.items()}


def export_torch(params, cfg: ModelConfig, out_dir, spm_path=None) -> pathlib.Path:
    import torch

    check_exportable(cfg, "torch")
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    state = {k: torch.from_numpy(v) for k, v in to_torch_state(params, cfg).items()}
    torch.save({"config": cfg.to_dict(), "state_dict": state}, out_dir / "model.pt")
    shutil.copy(MODULE_FILE, out_dir / "torch_model.py")
    if spm_path is not None and pathlib.Path(spm_path).exists():
        shutil.copy(spm_path, out_dir / Workdir.VOCABULARY)
    return out_dir / "model.pt"
