"""What each export format can express, checked before any checkpoint is read or any file written.

The attention side comes from the variant records (model/variants.py: ``exporters``), so a new variant is
refused by every format until its record says otherwise; the structural options each format's model lacks
are listed here. Flat formats (safetensors, npz) dump any params and need no check.
"""

from __future__ import annotations

from t2t_jax.errors import ExportError
from t2t_jax.model.config import ATTENTION_KINDS, ModelConfig

FLAT_FORMATS = ("safetensors", "npz")


def _attention_reasons(cfg: ModelConfig, fmt: str) -> list[str]:
    reasons = [
        f"{kind} attention {cfg.attention_function(kind)!r}"
        for kind in ATTENTION_KINDS
        if fmt not in cfg.attention_variant(kind).exporters
    ]
    if cfg.local_window:
        reasons.append(f"model.local_window = {cfg.local_window}")
    if cfg.key_value_heads != cfg.num_heads:
        reasons.append(f"{cfg.key_value_heads} key/value heads for {cfg.num_heads} query heads")
    return reasons


def _marian_reasons(cfg: ModelConfig) -> list[str]:
    reasons = []
    if cfg.ln != "post":
        reasons.append("pre-LN (Marian is post-LN only)")
    if cfg.positions != "sinusoidal":
        reasons.append(f"positions={cfg.positions!r} (Marian recomputes the paper's sinusoids on load)")
    if cfg.head_dim_k * cfg.num_heads != cfg.d_model or cfg.head_dim_v * cfg.num_heads != cfg.d_model:
        reasons.append("d_k or d_v other than d_model / heads")
    if cfg.d_model % 2:
        reasons.append("odd d_model")
    return reasons


def _ctranslate2_reasons(cfg: ModelConfig) -> list[str]:
    if cfg.head_dim_k * cfg.num_heads != cfg.d_model or cfg.head_dim_v * cfg.num_heads != cfg.d_model:
        return ["d_k or d_v other than d_model / heads (CTranslate2 splits d_model into the heads)"]
    return []


STRUCTURAL = {"hf-marian": _marian_reasons, "torch": lambda cfg: [], "ctranslate2": _ctranslate2_reasons}
ALTERNATIVE = {
    "hf-marian": "--format torch (mirrors more options) or safetensors",
    "ctranslate2": "--format torch (mirrors more options) or safetensors",
    "torch": "--format safetensors (the params as they are)",
}


def check_exportable(cfg: ModelConfig, fmt: str) -> None:
    """Raise one ExportError listing everything ``fmt`` cannot express about ``cfg``."""
    if fmt in FLAT_FORMATS:
        return
    reasons = STRUCTURAL[fmt](cfg) + _attention_reasons(cfg, fmt)
    if reasons:
        raise ExportError(f"cannot export to {fmt}: " + "; ".join(reasons) + f". Use {ALTERNATIVE[fmt]}.")
