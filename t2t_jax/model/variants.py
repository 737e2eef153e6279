"""Attention variants as data: one record per name answers everything the program asks about a variant.

Config validation (model/config.py), the attention layer (its extra parameters, whether the cached
fast path applies; model/attention.py), attention maps (cli/visualize.py), FLOP counting (model/flops.py)
and the exporters (export/support.py) read these records; none of them names a variant. Adding one is a
``register(AttentionVariant(...))`` next to its function (docs/attention.md, "Adding an attention variant").

Imports jax only (no Flax, no model code), so a config is validated before any layer is built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from t2t_jax.model import attention_functions as fns

SUBLAYERS = ("encoder_self", "decoder_self", "cross")  # the three kinds of attention sublayer
EXPORT_FORMATS = (
    "hf-marian",
    "torch",
    "ctranslate2",
)  # formats that re-implement the computation (flat dumps take any params)


@dataclasses.dataclass(frozen=True)
class ExtraParam:
    """A learned float32 parameter of a variant, stored at ``<sublayer>/<name>``, initialised
    N(0, d_k^-0.5), and passed to the function as ``keyword``."""

    name: str
    keyword: str
    shape: Callable  # (ModelConfig) -> shape tuple


@dataclasses.dataclass(frozen=True)
class AttentionVariant:
    """What a registry name means. ``function`` follows attention_functions.py's signature."""

    name: str
    function: Callable
    params: tuple[ExtraParam, ...] = ()
    # Set iff the variant is exactly softmax(scale(d_k) · q·kᵀ + bias)·v: then decoding uses the grouped-cache
    # product (one [beam, d] x [d, n] matmul per sentence and head) and attention maps can be drawn.
    # None: decoding gathers each hypothesis's keys/values and calls ``function``.
    dot_scale: Callable[[int], float] | None = None
    query_offset: bool = False  # the function takes ``query_offset`` (absolute query position; relative distances)
    sublayers: tuple[str, ...] = SUBLAYERS  # where it may be used; model.attention falls back to dot_product elsewhere
    exporters: tuple[str, ...] = ()  # EXPORT_FORMATS whose model computes the same function
    pair_flops: Callable[[int, int], int] = lambda d_k, d_v: 2 * (d_k + d_v)  # matmul FLOPs per (query, key, head)
    summary: str = ""  # one line saying what it computes (for readers of the registry)

    def __post_init__(self):
        for sublayer in self.sublayers:
            if sublayer not in SUBLAYERS:
                raise ValueError(f"attention variant {self.name!r}: unknown sublayer {sublayer!r}; one of {SUBLAYERS}")
        for fmt in self.exporters:
            if fmt not in EXPORT_FORMATS:
                raise ValueError(
                    f"attention variant {self.name!r}: unknown export format {fmt!r}; one of {EXPORT_FORMATS}"
                )


REGISTRY: dict[str, AttentionVariant] = {}


def register(variant: AttentionVariant) -> AttentionVariant:
    """Add a variant (a name may be registered once; ``unregister`` first to replace it)."""
    if variant.name in REGISTRY:
        raise ValueError(f"attention variant {variant.name!r} is already registered")
    REGISTRY[variant.name] = variant
    return variant


def unregister(name: str) -> None:
    REGISTRY.pop(name, None)


def get(name: str) -> AttentionVariant:
    return REGISTRY[name]


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def _rsqrt(d_k: int) -> float:
    return d_k**-0.5


def _relative_table(size_of):
    return lambda cfg: (2 * cfg.relative_clip + 1, size_of(cfg))


register(
    AttentionVariant(
        "dot_product",
        fns.dot_product,
        dot_scale=_rsqrt,
        exporters=EXPORT_FORMATS,
        summary="scaled dot-product, eq. (1)",
    )
)
register(
    AttentionVariant(
        "dot_product_unscaled",
        fns.dot_product_unscaled,
        dot_scale=lambda d_k: 1.0,
        exporters=("ctranslate2",),  # its queries_scale attribute takes 1.0
        summary="dot-product without 1/sqrt(d_k) (§3.2.1)",
    )
)
register(
    AttentionVariant(
        "fused",
        fns.fused,
        dot_scale=_rsqrt,
        exporters=EXPORT_FORMATS,
        summary="jax.nn.dot_product_attention (cuDNN flash attention on GPUs); no weight dropout",
    )
)
register(
    AttentionVariant(
        "additive",
        fns.additive,
        params=(ExtraParam("additive_v", "v", lambda cfg: (cfg.num_heads, cfg.head_dim_k)),),
        summary="additive (Bahdanau) attention, vᵀ tanh(q + k) (§3.2.1)",
    )
)
register(
    AttentionVariant(
        "relative",
        fns.relative,
        params=(
            ExtraParam("relative_key", "rel_key", _relative_table(lambda cfg: cfg.head_dim_k)),
            ExtraParam("relative_value", "rel_value", _relative_table(lambda cfg: cfg.head_dim_v)),
        ),
        query_offset=True,
        sublayers=("encoder_self", "decoder_self"),  # no distance between two sequences
        pair_flops=lambda d_k, d_v: 4 * (d_k + d_v),  # content and relative terms, for keys and for values
        summary="relative position representations, distances clipped to model.relative_clip (Shaw et al. 2018)",
    )
)
