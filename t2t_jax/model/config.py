"""The frozen model hyper-parameters, validated once, shared by every module.

Kept apart from the ml_collections run config so the model can be built from a
checkpoint's saved config alone, and so a bad value fails at construction with a
message naming the field instead of deep inside a trace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from t2t_jax.errors import ConfigError
from t2t_jax.model import variants
from t2t_jax.special_ids import DEFAULT as DEFAULT_IDS

LN_PLACEMENTS = ("post", "pre")
POSITION_KINDS = ("sinusoidal", "concat", "learned", "none")
DTYPES = ("float32", "bfloat16", "auto")  # auto: chosen where the model runs (precision.resolve_dtype)
ACTIVATIONS = ("relu", "swish")
ATTENTION_ALIASES = ("local", "multi_query", "grouped_query")  # dot_product + local_window / kv_heads
ATTENTION_KINDS = variants.SUBLAYERS  # encoder_self, decoder_self, cross


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Paper "base" by default (Vaswani et al. 2017, Table 3)."""

    vocab_size: int = 37000
    d_model: int = 512
    num_heads: int = 8
    d_k: int | None = None  # per-head query/key size; None = d_model // num_heads
    d_v: int | None = None  # per-head value size; None = d_model // num_heads
    kv_heads: int | None = None  # key/value heads: None = num_heads; 1 = multi-query; 1 < k < h = grouped-query
    relative_clip: int = 16  # attention="relative": distances clipped to [-k, k] (Shaw et al. 2018)
    local_window: int = 0  # >0: self-attention sees only positions within this distance (Table 1, row 4)
    d_ff: int = 2048
    encoder_layers: int = 6
    decoder_layers: int = 6
    dropout: float = 0.1  # residual and embedding dropout (the paper's P_drop)
    attention_dropout: float = 0.0
    relu_dropout: float = 0.0
    ln: str = "post"
    ln_epsilon: float = 1e-6
    positions: str = "sinusoidal"
    attention: str = "dot_product"  # a registry function, or local / multi_query / grouped_query (dot_product +)
    encoder_self_attention: str | None = None  # per-sublayer registry function; None = model.attention
    decoder_self_attention: str | None = None
    cross_attention: str | None = None
    activation: str = "relu"  # FFN nonlinearity; "swish" for imported OPUS-MT (Marian) models
    attention_bias: bool = False  # biases on q/k/v/o projections (the paper has none; Marian has them)
    logits_bias: bool = False  # a bias on the pre-softmax logits (Marian's final_logits_bias)
    dtype: str = "float32"  # compute dtype; params stay float32
    max_len: int = 256  # size of learned position table and decode caches
    pad_id: int = DEFAULT_IDS.pad  # special ids: t2t_jax/special_ids.py
    eos_id: int = DEFAULT_IDS.eos

    def __post_init__(self):
        _check_types(self)
        _check_positive(self, ("vocab_size", "d_model", "num_heads", "d_ff", "max_len"))
        _check_non_negative(self, ("encoder_layers", "decoder_layers"))
        for name in ("dropout", "attention_dropout", "relu_dropout"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"model.{name} = {value}: a dropout rate must be in [0, 1)")
        if self.d_model % self.num_heads and (self.d_k is None or self.d_v is None):
            raise ConfigError(
                f"model.d_model = {self.d_model} is not divisible by model.num_heads = "
                f"{self.num_heads}; change one of them or set model.d_k and model.d_v explicitly"
            )
        for name in ("d_k", "d_v"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"model.{name} = {value}: must be a positive integer or None")
        if self.kv_heads is not None and (self.kv_heads <= 0 or self.num_heads % self.kv_heads):
            raise ConfigError(
                f"model.kv_heads = {self.kv_heads}: must be a positive divisor of model.num_heads = {self.num_heads}"
            )
        if self.local_window < 0:
            raise ConfigError(f"model.local_window = {self.local_window}: must be >= 0 (0 = unrestricted)")
        _check_choice("ln", self.ln, LN_PLACEMENTS)
        _check_choice("positions", self.positions, POSITION_KINDS)
        _check_choice("dtype", self.dtype, DTYPES)
        _check_choice("activation", self.activation, ACTIVATIONS)
        functions = variants.names()
        _check_choice("attention", self.attention, functions + ATTENTION_ALIASES)
        for kind in ATTENTION_KINDS:
            chosen = getattr(self, f"{kind}_attention")
            if chosen is not None:
                _check_choice(f"{kind}_attention", chosen, functions)
                if kind not in variants.get(chosen).sublayers:
                    raise ConfigError(
                        f"model.{kind}_attention = {chosen!r}: that variant is for "
                        f"{list(variants.get(chosen).sublayers)} only"
                    )
        if self.attention == "local" and self.local_window <= 0:
            raise ConfigError("model.attention = 'local' needs model.local_window > 0 (the neighbourhood size r)")
        if self.attention == "grouped_query" and not (self.kv_heads and 1 < self.kv_heads < self.num_heads):
            raise ConfigError("model.attention = 'grouped_query' needs 1 < model.kv_heads < model.num_heads")
        if self.attention == "multi_query" and self.kv_heads not in (None, 1):
            raise ConfigError("model.attention = 'multi_query' means model.kv_heads = 1")
        if self.pad_id == self.eos_id:
            raise ConfigError("model.pad_id and model.eos_id must differ")

    @property
    def key_value_heads(self) -> int:
        return 1 if self.attention == "multi_query" else (self.kv_heads or self.num_heads)

    def attention_function(self, kind: str) -> str:
        """Registry name of one kind of sublayer (encoder_self, decoder_self, cross): its own key if set,
        else model.attention, else dot_product (an alias, or a variant that does not serve this sublayer,
        e.g. relative positions in cross-attention, where two sequences have no distance)."""
        chosen = getattr(self, f"{kind}_attention")
        if chosen is not None:
            return chosen
        if self.attention in ATTENTION_ALIASES or kind not in variants.get(self.attention).sublayers:
            return "dot_product"
        return self.attention

    def attention_variant(self, kind: str) -> variants.AttentionVariant:
        """The registry record of one kind of sublayer."""
        return variants.get(self.attention_function(kind))

    @property
    def head_dim_k(self) -> int:
        return self.d_k if self.d_k is not None else self.d_model // self.num_heads

    @property
    def head_dim_v(self) -> int:
        return self.d_v if self.d_v is not None else self.d_model // self.num_heads

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> ModelConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown model key(s) {unknown}; valid keys: {sorted(known)}")
        return cls(**dict(values))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _check_positive(cfg, names):
    for name in names:
        value = getattr(cfg, name)
        if not isinstance(value, int) or value <= 0:
            raise ConfigError(f"model.{name} = {value!r}: must be a positive integer")


def _check_non_negative(cfg, names):
    for name in names:
        value = getattr(cfg, name)
        if not isinstance(value, int) or value < 0:
            raise ConfigError(f"model.{name} = {value!r}: must be a non-negative integer")


def _check_choice(name, value, choices):
    if value not in choices:
        raise ConfigError(f"model.{name} = {value!r}: must be one of {list(choices)}")


_TYPES = {  # annotation -> (accepted types, what to tell the user); bool is not an int here
    "int": ((int,), "an integer"),
    "int | None": ((int, type(None)), "an integer or None"),
    "float": ((int, float), "a number"),
    "str": ((str,), "a string"),
    "str | None": ((str, type(None)), "a string or None"),
    "bool": ((bool,), "True or False"),
}


def _check_types(cfg) -> None:
    """Every field of the type it is declared with (keys whose default is None take any type on the command
    line, so ``--config.model.d_k=abc`` must be refused here, by name)."""
    for field in dataclasses.fields(cfg):
        accepted, human = _TYPES[field.type]
        value = getattr(cfg, field.name)
        if not isinstance(value, accepted) or (isinstance(value, bool) and bool not in accepted):
            raise ConfigError(f"model.{field.name} = {value!r}: must be {human}")
