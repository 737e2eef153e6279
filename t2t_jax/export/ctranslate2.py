"""``--format ctranslate2``: a CTranslate2 model directory built with its Python spec API.

``ct2-transformers-converter`` cannot read our HF-Marian export: CTranslate2's Marian loader assumes
HF-Marian's layout (pad is the last id, the decoder starts from a zero embedding), while ours has pad = 0 and
starts from the pad row. Filling a ``TransformerSpec`` directly (as CTranslate2's fairseq and OpenNMT
converters do) keeps our layout: the pad piece is the decoder start token, the position table is ours as
is (no channel permutation), EOS is appended to the source by CTranslate2 (``add_source_eos``), and the
float32 weights are stored unquantised (pick ``compute_type="int8"`` etc. when loading).

    import ctranslate2, sentencepiece as spm
    translator = ctranslate2.Translator(out_dir)
    sp = spm.SentencePieceProcessor(model_file=f"{out_dir}/source.spm")
    result = translator.translate_batch([sp.encode(line, out_type=str) for line in lines], beam_size=4)
    print(sp.decode(result[0].hypotheses[0]))
"""

from __future__ import annotations

import pathlib
import shutil

import numpy as np

from t2t_jax.errors import ExportError
from t2t_jax.export.support import check_exportable
from t2t_jax.model import positions as positions_lib
from t2t_jax.model.config import ATTENTION_KINDS, ModelConfig
from t2t_jax.special_ids import SpecialIds

TOKENIZER_FILES = ("source.spm", "target.spm")  # CTranslate2 / OPUS-MT naming; one shared vocabulary


def vocabulary_tokens(cfg: ModelConfig, spm_path=None) -> tuple[list[str], int]:
    """(the token string of every id, the unknown token's id): sentencepiece pieces, or ``<id>`` names when the
    run has no vocabulary."""
    if spm_path is None:
        ids = SpecialIds.of(cfg)
        names = {ids.pad: "<pad>", ids.eos: "</s>", ids.unk: "<unk>"}
        return [names.get(i, f"<{i}>") for i in range(cfg.vocab_size)], ids.unk
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=str(spm_path))
    if processor.get_piece_size() != cfg.vocab_size:
        raise ExportError(
            f"vocabulary {spm_path} has {processor.get_piece_size()} pieces but model.vocab_size is {cfg.vocab_size}"
        )
    return [processor.id_to_piece(i) for i in range(cfg.vocab_size)], processor.unk_id()


def _matrix(kernel) -> np.ndarray:
    """A [d_in, ...] kernel as CTranslate2's [d_out, d_in] weight."""
    kernel = np.asarray(kernel, np.float32)
    return np.ascontiguousarray(kernel.reshape(kernel.shape[0], -1).T)


def _linear(spec, *parts) -> None:
    """Our Dense/Projection params (kernel [d_in, ...], optional bias) into a LinearSpec; several projections
    of the same input become one (rows stacked: q | k | v)."""
    spec.weight = np.concatenate([_matrix(p["kernel"]) for p in parts], 0)
    if all("bias" in p for p in parts):
        spec.bias = np.concatenate([np.asarray(p["bias"], np.float32).reshape(-1) for p in parts])


def _out_projection(spec, p) -> None:
    kernel = np.asarray(p["out"]["kernel"], np.float32)  # [heads, d_v, d_model]
    spec.weight = np.ascontiguousarray(kernel.reshape(-1, kernel.shape[-1]).T)
    if "bias" in p["out"]:
        spec.bias = np.asarray(p["out"]["bias"], np.float32)


def _attention(spec, p, scale: float, cross: bool) -> None:
    if cross:  # CTranslate2 projects the query from the decoder, keys and values from the encoder output
        _linear(spec.linear[0], p["query"])
        _linear(spec.linear[1], p["key"], p["value"])
    else:
        _linear(spec.linear[0], p["query"], p["key"], p["value"])
    _out_projection(spec.linear[-1], p)
    spec.queries_scale = np.float32(scale)


def _norm(spec, p) -> None:
    spec.gamma = np.asarray(p["scale"], np.float32)
    spec.beta = np.asarray(p["bias"], np.float32)


def _ffn(spec, p) -> None:
    _linear(spec.linear_0, p["wi"])
    _linear(spec.linear_1, p["wo"])


def _position_table(tree, cfg: ModelConfig) -> np.ndarray:
    """[max_len, d_model]: what our PositionSignal adds at positions 0 .. max_len - 1."""
    if cfg.positions == "learned":
        return np.asarray(tree["pos_embed"]["embedding"], np.float32)
    if cfg.positions == "none":
        return np.zeros((cfg.max_len, cfg.d_model), np.float32)
    return positions_lib.FIXED_TABLES[cfg.positions](cfg.max_len, cfg.d_model)


def build_spec(params, cfg: ModelConfig, tokens: list[str], unk_id: int):
    """The filled ``ctranslate2.specs.TransformerSpec`` of ``params`` (validated, not yet saved)."""
    try:
        from ctranslate2.specs import common_spec, transformer_spec
    except ImportError as error:
        raise ExportError(
            f"--format ctranslate2 needs the ctranslate2 package ({error}): pip install 't2t_jax[export]'"
        ) from error

    activation = {"relu": common_spec.Activation.RELU, "swish": common_spec.Activation.SWISH}[cfg.activation]
    spec = transformer_spec.TransformerSpec.from_config(
        (cfg.encoder_layers, cfg.decoder_layers), cfg.num_heads, pre_norm=cfg.ln == "pre", activation=activation
    )
    embedding = np.asarray(params["embed"]["embedding"], np.float32)  # [vocab, d_model], shared three ways
    for stack, tree in ((spec.encoder, params["encoder"]), (spec.decoder, params["decoder"])):
        stack.scale_embeddings = np.float32(np.sqrt(cfg.d_model))  # as our SharedEmbedding (True would mean 1.0)
        stack.position_encodings.encodings = _position_table(tree, cfg)
        if cfg.ln == "pre":
            _norm(stack.layer_norm, tree["ln_final"])
    spec.encoder.embeddings[0].weight = embedding
    spec.decoder.embeddings.weight = embedding
    spec.decoder.projection.weight = embedding
    if "logits_bias" in params["embed"]:
        spec.decoder.projection.bias = np.asarray(params["embed"]["logits_bias"], np.float32)
    scale = {kind: cfg.attention_variant(kind).dot_scale(cfg.head_dim_k) for kind in ATTENTION_KINDS}
    for i, layer in enumerate(spec.encoder.layer):
        p = params["encoder"][f"layer_{i}"]
        _attention(layer.self_attention, p["self_attn"], scale["encoder_self"], cross=False)
        _norm(layer.self_attention.layer_norm, p["ln_attn"])
        _ffn(layer.ffn, p["ffn"])
        _norm(layer.ffn.layer_norm, p["ln_ffn"])
    for i, layer in enumerate(spec.decoder.layer):
        p = params["decoder"][f"layer_{i}"]
        _attention(layer.self_attention, p["self_attn"], scale["decoder_self"], cross=False)
        _norm(layer.self_attention.layer_norm, p["ln_self"])
        _attention(layer.attention, p["cross_attn"], scale["cross"], cross=True)
        _norm(layer.attention.layer_norm, p["ln_cross"])
        _ffn(layer.ffn, p["ffn"])
        _norm(layer.ffn.layer_norm, p["ln_ffn"])
    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tokens)
    spec.config.unk_token = tokens[unk_id]
    spec.config.eos_token = tokens[cfg.eos_id]
    spec.config.bos_token = tokens[cfg.pad_id]  # we have no BOS; CTranslate2 wants one named
    spec.config.decoder_start_token = tokens[cfg.pad_id]  # our decoder starts from the pad row
    spec.config.add_source_eos = True  # our sources end with EOS (data/tokenizer.py)
    spec.config.layer_norm_epsilon = cfg.ln_epsilon
    spec.validate()
    return spec


def export_ctranslate2(params, cfg: ModelConfig, out_dir, spm_path=None) -> pathlib.Path:
    """Write ``model.bin``, ``config.json``, the vocabularies and (with a vocabulary) ``source.spm`` /
    ``target.spm`` into ``out_dir``. Nothing is written on refusal."""
    check_exportable(cfg, "ctranslate2")
    spec = build_spec(params, cfg, *vocabulary_tokens(cfg, spm_path))
    spec.optimize(quantization=None)  # aliases the three shared embedding matrices; float32 kept
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    spec.save(str(out_dir))
    if spm_path is not None:
        for name in TOKENIZER_FILES:
            shutil.copy(spm_path, out_dir / name)
    return out_dir
