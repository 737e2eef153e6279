"""The Transformer's forward pass written from the paper in NumPy, one sentence pair at a time, for the tests.

Nothing here comes from t2t_jax.model: no masks (each sentence is computed alone, at its own length, so padding
and packing cannot leak into it), the sinusoids of §3.5 written out again, attention as eq. (1) per head and
concatenated (§3.2.2), the residual + LayerNorm of §3.1 (or the pre-LN order), eq. (2) for the FFN, the shared
embedding scaled by √d_model on the way in and transposed on the way out (§3.4). Only the parameter names are
the model's, so that the same random weights can be fed to both.
"""

from __future__ import annotations

import numpy as np


def positions(length: int, d_model: int) -> np.ndarray:
    """§3.5: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))."""
    pe = np.zeros((length, d_model))
    for pos in range(length):
        for i in range(0, d_model, 2):
            angle = pos / 10000 ** (i / d_model)
            pe[pos, i] = np.sin(angle)
            if i + 1 < d_model:
                pe[pos, i + 1] = np.cos(angle)
    return pe


def layer_norm(x, p, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * p["scale"] + p["bias"]


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def attention(x_q, x_kv, p, causal: bool):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O, head_i = softmax(Q_i K_iᵀ / √d_k) V_i."""
    heads = []
    for i in range(p["query"]["kernel"].shape[1]):
        q = x_q @ p["query"]["kernel"][:, i, :]
        k = x_kv @ p["key"]["kernel"][:, i, :]
        v = x_kv @ p["value"]["kernel"][:, i, :]
        scores = q @ k.T / np.sqrt(q.shape[-1])
        if causal:  # position t sees 0..t
            scores = np.where(np.tril(np.ones(scores.shape, bool)), scores, -np.inf)
        heads.append(softmax(scores) @ v)
    w_o = p["out"]["kernel"].reshape(-1, p["out"]["kernel"].shape[-1])  # [h * d_v, d_model]
    return np.concatenate(heads, axis=-1) @ w_o


def ffn(x, p):
    """eq. (2): max(0, x W1 + b1) W2 + b2."""
    return np.maximum(0.0, x @ p["wi"]["kernel"] + p["wi"]["bias"]) @ p["wo"]["kernel"] + p["wo"]["bias"]


def sublayer(x, fn, norm, ln: str, eps: float):
    """post: LayerNorm(x + Sublayer(x)) (§3.1); pre: x + Sublayer(LayerNorm(x))."""
    return layer_norm(x + fn(x), norm, eps) if ln == "post" else x + fn(layer_norm(x, norm, eps))


def logits(params, source, target, *, ln: str = "post", eps: float = 1e-6, start_id: int = 0) -> np.ndarray:
    """[len(target), vocab] logits of one pair, teacher-forced: the decoder reads start_id, target[:-1]."""
    params = _float64(params)
    table = params["embed"]["embedding"]
    d_model = table.shape[1]

    def embed(ids):
        return table[np.asarray(ids)] * np.sqrt(d_model) + positions(len(ids), d_model)

    x = embed(source)
    encoder = params["encoder"]
    for n in range(sum(k.startswith("layer_") for k in encoder)):
        layer = encoder[f"layer_{n}"]
        x = sublayer(x, lambda h, a=layer["self_attn"]: attention(h, h, a, False), layer["ln_attn"], ln, eps)
        x = sublayer(x, lambda h, f=layer["ffn"]: ffn(h, f), layer["ln_ffn"], ln, eps)
    if ln == "pre":
        x = layer_norm(x, encoder["ln_final"], eps)
    y = embed([start_id, *list(target)[:-1]])
    decoder = params["decoder"]
    for n in range(sum(k.startswith("layer_") for k in decoder)):
        layer = decoder[f"layer_{n}"]
        y = sublayer(y, lambda h, a=layer["self_attn"]: attention(h, h, a, True), layer["ln_self"], ln, eps)
        y = sublayer(y, lambda h, a=layer["cross_attn"]: attention(h, x, a, False), layer["ln_cross"], ln, eps)
        y = sublayer(y, lambda h, f=layer["ffn"]: ffn(h, f), layer["ln_ffn"], ln, eps)
    if ln == "pre":
        y = layer_norm(y, decoder["ln_final"], eps)
    return y @ table.T


def _float64(tree):
    if isinstance(tree, dict) or hasattr(tree, "items"):
        return {k: _float64(v) for k, v in tree.items()}
    return np.asarray(tree, np.float64)
