"""A decode step's products at few rows, computed feature-major: Wᵀ xᵀ instead of x W.

At a handful of decoder rows a step is mostly products of [rows, d] activations with whole weight matrices, and
XLA:CPU runs ``x @ W`` for 2 to ~32 rows much slower than the same product with the weights on the left,
``Wᵀ @ xᵀ`` on [d, rows] activations (bench/dot_layout.py). So a decoding program for few rows computes each
product that way: the activations stay row-major between products (LayerNorm, attention and the cache read them
so), and each product transposes its input and output behind ``optimization_barrier``, without which XLA folds
the transposes back into a row-major product. The weights must be stored transposed for it: read transposed in
place, the products are slower than row-major ones. ``decoder_weights`` makes those copies outside the search
loop: once per decoding call, or once per params for the translate path (``with_copies``). The modules find them
in the ``"feature_major"`` collection at their own path (``Dense``: ``kernel`` [d_out, d_in];
``MultiHeadAttention``: ``qkv`` and ``query`` / ``out`` ``kernel``; ``SharedEmbedding``: ``embedding``) and fall
back to their row-major products where it is absent (training, scoring, encoding, many rows).
"""

from __future__ import annotations

import collections
import functools
import threading

import jax
import jax.numpy as jnp

from t2t_jax.model import precision

COLLECTION = "feature_major"
# decoder rows (sentences x beam) for which a decoding program computes its products feature-major: one row is a
# matrix-vector product XLA runs as fast row-major, and from ~64 rows on row-major products are as fast or faster
ROWS = range(2, 33)


def wanted(rows: int) -> bool:
    """Whether a decoding program of ``rows`` decoder rows should compute its products feature-major: on CPU
    only, where it was measured (an accelerator's matmul units have layouts and costs of their own)."""
    return rows in ROWS and jax.default_backend() == "cpu"


def dot(x, kernel_t, dtype):
    """``x`` [..., d_in] times the kernel whose transpose is ``kernel_t`` [d_out, d_in]: [..., d_out] in
    ``dtype`` (float32 accumulation), as kernel_t @ xᵀ on [d_in, rows] behind optimization barriers."""
    barrier = jax.lax.optimization_barrier
    rows = x.reshape(-1, x.shape[-1])  # [rows, d_in]
    y_t = precision.einsum("fd,dr->fr", kernel_t, barrier(rows.T), dtype)  # [d_out, rows]
    return barrier(y_t).T.reshape(*x.shape[:-1], kernel_t.shape[0])


def logits(x, embedding, dtype):
    """The tied output projection x Eᵀ of [..., d] ``x``: [..., vocab] float32; the embedding [vocab, d] is
    already the feature-major weight."""
    barrier = jax.lax.optimization_barrier
    rows = x.reshape(-1, x.shape[-1])
    logits_t = precision.einsum("vd,dr->vr", embedding, barrier(rows.T), dtype, jnp.float32)  # [vocab, rows]
    return barrier(logits_t).T.reshape(*x.shape[:-1], embedding.shape[0])


def decoder_weights(params, cfg) -> dict:
    """The ``"feature_major"`` collection for a decoding step: each decoder product's kernel as [d_out, d_in]
    in the compute dtype, self-attention's query/key/value kernels stacked (``qkv``, the one product a step
    makes of them), and the embedding as the output projection's weight. Cross-attention keys/values are
    projected from the encoder output once, row-major, and have no entry."""
    dtype = jnp.dtype(cfg.dtype)

    def to_heads(kernel):  # [d, heads, head_dim] -> [heads * head_dim, d]
        return kernel.reshape(kernel.shape[0], -1).T.astype(dtype)

    def from_heads(kernel):  # [heads, head_dim, d] -> [d, heads * head_dim]
        return kernel.reshape(-1, kernel.shape[-1]).T.astype(dtype)

    layers = {}
    for i in range(cfg.decoder_layers):
        layer = params["decoder"][f"layer_{i}"]
        self_attn, cross_attn, ffn = layer["self_attn"], layer["cross_attn"], layer["ffn"]
        qkv = [to_heads(self_attn[name]["kernel"]) for name in ("query", "key", "value")]
        layers[f"layer_{i}"] = {
            "self_attn": {"qkv": jnp.concatenate(qkv), "out": {"kernel": from_heads(self_attn["out"]["kernel"])}},
            "cross_attn": {
                "query": {"kernel": to_heads(cross_attn["query"]["kernel"])},
                "out": {"kernel": from_heads(cross_attn["out"]["kernel"])},
            },
            "ffn": {name: {"kernel": ffn[name]["kernel"].T.astype(dtype)} for name in ("wi", "wo")},
        }
    embedding = params["embed"]["embedding"].astype(dtype)
    # one barrier: the copies stay materialised, never re-read through a transposed view of the params
    return jax.lax.optimization_barrier({"embed": {"embedding": embedding}, "decoder": layers})


_made = collections.OrderedDict()  # id(params) -> (params, params with copies): the last few params decoded
_made_lock = threading.Lock()
KEPT = 2  # params whose copies are kept alive (a server's model; a training run's evaluations each bring new ones)


def with_copies(params, cfg) -> dict:
    """``params`` with ``decoder_weights``' copies beside them under ``COLLECTION`` (a top-level key Flax
    ignores; ``split`` takes it off), made once per params object: the translate path decodes many batches,
    and a server many requests, with the same params, and making the copies costs about what a few dozen
    steps of a few rows do. Off CPU no program reads them: ``params`` as they are."""
    if jax.default_backend() != "cpu":
        return params
    with _made_lock:
        kept = _made.get(id(params))
        if kept is not None and kept[0] is params:
            _made.move_to_end(id(params))
            return kept[1]
        cfg = precision.resolve_dtype(cfg)[0]
        prepared = {**params, COLLECTION: _decoder_weights_jit(params, cfg)}
        _made[id(params)] = (params, prepared)  # params held: its id is not reused while kept
        while len(_made) > KEPT:
            _made.popitem(last=False)
        return prepared


def split(params) -> tuple[dict, dict | None]:
    """(the model's params, the copies ``with_copies`` put beside them or None)."""
    if COLLECTION not in params:
        return params, None
    return {k: v for k, v in params.items() if k != COLLECTION}, params[COLLECTION]


@functools.partial(jax.jit, static_argnums=1)
def _decoder_weights_jit(params, cfg):
    return decoder_weights(params, cfg)
