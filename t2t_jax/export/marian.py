"""t2t_jax <-> Hugging Face Marian (transformers 5.x), an exact re-parametrisation.

Marian recomputes its position table on load as [sin | cos] halves with the paper's
frequencies; our default table interleaves them (sin at 2i, cos at 2i+1). Permuting the
d_model channels of the whole residual stream (embedding columns, LayerNorm params,
the d_model side of every kernel) maps one onto the other and leaves logits unchanged.
Marian also has biases on attention projections (exported as zeros), a zero
``final_logits_bias``, LayerNorm epsilon 1e-5, and decoder start = pad.
"""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np

from t2t_jax.export.support import check_exportable
from t2t_jax.model.config import ModelConfig

MARIAN_LN_EPSILON = 1e-5


def channel_permutation(d_model: int) -> np.ndarray:
    """Marian channel k holds our channel perm[k]: [0, 2, 4, ..., 1, 3, 5, ...]."""
    return np.concatenate([np.arange(0, d_model, 2), np.arange(1, d_model, 2)])


PROJECTIONS = (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj"))


def _attention(prefix, p, perm, out):
    d = p["query"]["kernel"].shape[0]
    for ours, theirs in PROJECTIONS:
        kernel = np.asarray(p[ours]["kernel"]).reshape(d, -1)
        out[f"{prefix}.{theirs}.weight"] = kernel[perm].T
        bias = p[ours].get("bias")
        out[f"{prefix}.{theirs}.bias"] = (
            np.zeros(kernel.shape[1], np.float32) if bias is None else np.asarray(bias).reshape(-1)
        )
    kernel = np.asarray(p["out"]["kernel"]).reshape(-1, d)
    out[f"{prefix}.out_proj.weight"] = kernel[:, perm].T
    bias = p["out"].get("bias")
    out[f"{prefix}.out_proj.bias"] = np.zeros(d, np.float32) if bias is None else np.asarray(bias)[perm]


def _norm(prefix, p, perm, out):
    out[f"{prefix}.weight"] = np.asarray(p["scale"])[perm]
    out[f"{prefix}.bias"] = np.asarray(p["bias"])[perm]


def _ffn(prefix, p, perm, out):
    out[f"{prefix}.fc1.weight"] = np.asarray(p["wi"]["kernel"])[perm].T
    out[f"{prefix}.fc1.bias"] = np.asarray(p["wi"]["bias"])
    out[f"{prefix}.fc2.weight"] = np.asarray(p["wo"]["kernel"])[:, perm].T
    out[f"{prefix}.fc2.bias"] = np.asarray(p["wo"]["bias"])[perm]


def to_marian_state(params, cfg: ModelConfig) -> dict[str, np.ndarray]:
    perm = channel_permutation(cfg.d_model)
    out = {}
    embedding = np.asarray(params["embed"]["embedding"])[:, perm]
    for name in (
        "model.shared.weight",
        "model.encoder.embed_tokens.weight",
        "model.decoder.embed_tokens.weight",
        "lm_head.weight",
    ):
        out[name] = embedding
    logits_bias = params["embed"].get("logits_bias")
    out["final_logits_bias"] = (
        np.zeros(cfg.vocab_size, np.float32) if logits_bias is None else np.asarray(logits_bias)
    )[None]
    for i in range(cfg.encoder_layers):
        p, pre = params["encoder"][f"layer_{i}"], f"model.encoder.layers.{i}"
        _attention(f"{pre}.self_attn", p["self_attn"], perm, out)
        _norm(f"{pre}.self_attn_layer_norm", p["ln_attn"], perm, out)
        _ffn(pre, p["ffn"], perm, out)
        _norm(f"{pre}.final_layer_norm", p["ln_ffn"], perm, out)
    for i in range(cfg.decoder_layers):
        p, pre = params["decoder"][f"layer_{i}"], f"model.decoder.layers.{i}"
        _attention(f"{pre}.self_attn", p["self_attn"], perm, out)
        _norm(f"{pre}.self_attn_layer_norm", p["ln_self"], perm, out)
        _attention(f"{pre}.encoder_attn", p["cross_attn"], perm, out)
        _norm(f"{pre}.encoder_attn_layer_norm", p["ln_cross"], perm, out)
        _ffn(pre, p["ffn"], perm, out)
        _norm(f"{pre}.final_layer_norm", p["ln_ffn"], perm, out)
    return {k: np.ascontiguousarray(v, np.float32) for k, v in out.items()}


def marian_config(cfg: ModelConfig) -> dict:
    return {
        "architectures": ["MarianMTModel"],
        "model_type": "marian",
        "vocab_size": cfg.vocab_size,
        "decoder_vocab_size": cfg.vocab_size,
        "d_model": cfg.d_model,
        "encoder_layers": cfg.encoder_layers,
        "decoder_layers": cfg.decoder_layers,
        "encoder_attention_heads": cfg.num_heads,
        "decoder_attention_heads": cfg.num_heads,
        "encoder_ffn_dim": cfg.d_ff,
        "decoder_ffn_dim": cfg.d_ff,
        "activation_function": cfg.activation,
        "max_position_embeddings": cfg.max_len,
        "scale_embedding": True,
        "pad_token_id": cfg.pad_id,
        "eos_token_id": cfg.eos_id,
        "decoder_start_token_id": cfg.pad_id,
        # No forced_eos_token_id: like t2t_jax, a hypothesis cut at max length keeps its last token.
        "forced_eos_token_id": None,
        "share_encoder_decoder_embeddings": True,
        "tie_word_embeddings": True,
        "dropout": cfg.dropout,
        "attention_dropout": cfg.attention_dropout,
        "activation_dropout": cfg.relu_dropout,
        "is_encoder_decoder": True,
    }


TYPICAL_TARGET_LENGTH = 20  # tokens: where HF's length penalty is matched to GNMT's (generation_config)


def hf_length_penalty(alpha: float, length: int = TYPICAL_TARGET_LENGTH) -> float:
    """HF ranks finished beams by log P / |Y|^p, GNMT (§6.1) by log P / ((5 + |Y|) / 6)^α. No p equals GNMT at
    every length; this p gives the same relative penalty d log(penalty) / d log |Y| = α |Y| / (5 + |Y|) at
    ``length`` (0.48 for α 0.6 at 20 tokens). docs/export.md gives the BLEU cost measured."""
    return alpha * length / (5 + length)


def generation_config(cfg: ModelConfig, beam: int = 4, alpha: float = 0.6) -> dict:
    """HF ``generate()`` defaults closest to ``t2t-translate``: beam 4, the nearest length penalty, start = pad,
    no forced EOS; ``max_length`` is the position table (HF cannot express §6.1's source length + 50)."""
    return {
        "decoder_start_token_id": cfg.pad_id,
        "bos_token_id": cfg.pad_id,
        "eos_token_id": cfg.eos_id,
        "pad_token_id": cfg.pad_id,
        "forced_eos_token_id": None,
        "num_beams": beam,
        "length_penalty": round(hf_length_penalty(alpha), 4),
        "early_stopping": False,
        "max_length": cfg.max_len,
        "do_sample": False,
    }


def export_marian(params, cfg: ModelConfig, out_dir, spm_path=None) -> pathlib.Path:
    """Write a directory MarianMTModel / MarianTokenizer load offline. Nothing is written on refusal (the
    command stages the directory and moves it into place: export/output.py)."""
    check_exportable(cfg, "hf-marian")
    from safetensors.numpy import save_file

    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    state = to_marian_state(params, cfg)
    for tied in ("model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight", "lm_head.weight"):
        state.pop(tied)  # tied to model.shared.weight
    save_file(state, str(out_dir / "model.safetensors"), metadata={"format": "pt"})
    (out_dir / "config.json").write_text(json.dumps(marian_config(cfg), indent=2))
    (out_dir / "generation_config.json").write_text(json.dumps(generation_config(cfg), indent=2))
    if spm_path is not None:
        _write_tokenizer(out_dir, spm_path, cfg)
    return out_dir


def _write_tokenizer(out_dir: pathlib.Path, spm_path, cfg: ModelConfig) -> None:
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=str(spm_path))
    vocab = {processor.id_to_piece(i): i for i in range(processor.get_piece_size())}
    shutil.copy(spm_path, out_dir / "source.spm")
    shutil.copy(spm_path, out_dir / "target.spm")
    (out_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    (out_dir / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "MarianTokenizer",
                "eos_token": processor.id_to_piece(cfg.eos_id),
                "unk_token": processor.id_to_piece(processor.unk_id()),
                "pad_token": processor.id_to_piece(cfg.pad_id),
                "model_max_length": cfg.max_len,  # the position table has this many rows
                "separate_vocabs": False,
            },
            indent=2,
        )
    )
