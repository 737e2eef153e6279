"""Hugging Face Marian -> t2t_jax params + ModelConfig (the inverse of marian.py), e.g. to fine-tune
an OPUS-MT model in JAX: swish activation, LayerNorm eps 1e-5, attention biases and final_logits_bias
all map onto model options."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from t2t_jax.errors import ExportError
from t2t_jax.export.marian import PROJECTIONS, channel_permutation
from t2t_jax.model.config import ModelConfig

ACTIVATIONS = {"relu": "relu", "swish": "swish", "silu": "swish"}


def read_marian(directory) -> tuple[dict, dict]:
    directory = pathlib.Path(directory)
    config = json.loads((directory / "config.json").read_text())
    if (directory / "model.safetensors").exists():
        from safetensors.numpy import load_file

        state = load_file(str(directory / "model.safetensors"))
    else:
        import torch

        state = {k: v.numpy() for k, v in torch.load(directory / "pytorch_model.bin").items()}
    return config, state


def marian_model_config(config: dict) -> ModelConfig:
    if not config.get("share_encoder_decoder_embeddings", True) or config.get("decoder_vocab_size") not in (
        None,
        config["vocab_size"],
    ):
        raise ExportError("separate source/target vocabularies cannot be imported (one shared table here)")
    if (
        config["encoder_attention_heads"] != config["decoder_attention_heads"]
        or config["encoder_ffn_dim"] != config["decoder_ffn_dim"]
    ):
        raise ExportError("encoder and decoder of different widths cannot be imported")
    activation = ACTIVATIONS.get(config.get("activation_function", "relu"))
    if activation is None or not config.get("scale_embedding", False):
        raise ExportError(
            f"activation {config.get('activation_function')!r} / scale_embedding "
            f"{config.get('scale_embedding')} not supported"
        )
    return ModelConfig(
        vocab_size=config["vocab_size"],
        d_model=config["d_model"],
        num_heads=config["encoder_attention_heads"],
        d_ff=config["encoder_ffn_dim"],
        encoder_layers=config["encoder_layers"],
        decoder_layers=config["decoder_layers"],
        dropout=float(config.get("dropout", 0.1)),
        ln_epsilon=1e-5,
        activation=activation,
        attention_bias=True,
        logits_bias=True,
        max_len=config.get("max_position_embeddings", 512),
        pad_id=config["pad_token_id"],
        eos_id=config["eos_token_id"],
    )


def from_marian_state(state: dict, cfg: ModelConfig) -> dict:
    inverse = np.argsort(channel_permutation(cfg.d_model))  # our channel c = marian channel inverse[c]
    h, dk = cfg.num_heads, cfg.head_dim_k
    get = lambda name: np.asarray(state[name], np.float32)  # noqa: E731

    def attention(prefix):
        p = {}
        for ours, theirs in PROJECTIONS:
            kernel = get(f"{prefix}.{theirs}.weight").T[inverse]
            p[ours] = {
                "kernel": kernel.reshape(cfg.d_model, h, dk),
                "bias": get(f"{prefix}.{theirs}.bias").reshape(h, dk),
            }
        kernel = get(f"{prefix}.out_proj.weight").T[:, inverse]
        p["out"] = {"kernel": kernel.reshape(h, dk, cfg.d_model), "bias": get(f"{prefix}.out_proj.bias")[inverse]}
        return p

    def norm(prefix):
        return {"scale": get(f"{prefix}.weight")[inverse], "bias": get(f"{prefix}.bias")[inverse]}

    def ffn(prefix):
        return {
            "wi": {"kernel": get(f"{prefix}.fc1.weight").T[inverse], "bias": get(f"{prefix}.fc1.bias")},
            "wo": {"kernel": get(f"{prefix}.fc2.weight").T[:, inverse], "bias": get(f"{prefix}.fc2.bias")[inverse]},
        }

    params = {
        "embed": {
            "embedding": get("model.shared.weight")[:, inverse],
            "logits_bias": get("final_logits_bias").reshape(-1),
        },
        "encoder": {},
        "decoder": {},
    }
    for i in range(cfg.encoder_layers):
        pre = f"model.encoder.layers.{i}"
        params["encoder"][f"layer_{i}"] = {
            "self_attn": attention(f"{pre}.self_attn"),
            "ln_attn": norm(f"{pre}.self_attn_layer_norm"),
            "ffn": ffn(pre),
            "ln_ffn": norm(f"{pre}.final_layer_norm"),
        }
    for i in range(cfg.decoder_layers):
        pre = f"model.decoder.layers.{i}"
        params["decoder"][f"layer_{i}"] = {
            "self_attn": attention(f"{pre}.self_attn"),
            "ln_self": norm(f"{pre}.self_attn_layer_norm"),
            "cross_attn": attention(f"{pre}.encoder_attn"),
            "ln_cross": norm(f"{pre}.encoder_attn_layer_norm"),
            "ffn": ffn(pre),
            "ln_ffn": norm(f"{pre}.final_layer_norm"),
        }
    return params
