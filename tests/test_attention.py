"""Attention functions against explicit references (eq. (1), additive), windows and per-sublayer choice;
the checks every registered variant goes through are in test_variants.py."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from variant_checks import check_cached_decoding_is_exact

from t2t_jax.model import Transformer
from t2t_jax.model.attention_functions import dot_product, fused
from t2t_jax.model.masks import attention_bias


def qkv(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(2, 5, 3, 4)).astype(np.float32) for _ in range(3)]


def reference(q, k, v, allowed):
    logits = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    logits = np.where(allowed[:, None], logits, -1e30)  # pad query rows: uniform, ignored below
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", weights, v)


@pytest.mark.parametrize("fn", [dot_product, fused])
@pytest.mark.parametrize("causal", [False, True])
def test_functions_equal_eq1_with_padding_and_causal_masks(fn, causal):
    q, k, v = qkv()
    segments = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)
    bias = attention_bias(segments, segments, causal=causal)
    allowed = np.asarray(bias[:, 0]) == 0
    got = np.asarray(fn(q, k, v, bias))
    want = reference(q, k, v, allowed)
    real = segments.astype(bool)
    np.testing.assert_allclose(got[real], want[real], atol=1e-5)


def test_fused_model_equals_dot_product_model(tiny_config, tiny_params):
    cfg = dataclasses.replace(tiny_config, attention="fused", attention_dropout=0.0)
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(3, 40, (2, 6)).astype(np.int32), rng.integers(3, 40, (2, 5)).astype(np.int32)
    src[1, 4:] = 0
    a = np.asarray(Transformer(tiny_config).apply({"params": tiny_params}, src, tgt))
    b = np.asarray(Transformer(cfg).apply({"params": tiny_params}, src, tgt))
    np.testing.assert_allclose(a, b, atol=1e-5)
    with pytest.raises(ValueError, match="no attention-weight dropout"):
        fused(*qkv(), None, dropout_rate=0.1, dropout_rng=jax.random.PRNGKey(0), deterministic=False)


def logits_of(cfg, params, src, tgt):
    return np.asarray(Transformer(cfg).apply({"params": params}, src, tgt))


def test_local_window_covering_everything_is_dot_product_and_small_window_is_local(tiny_config, tiny_params):
    rng = np.random.default_rng(2)
    src, tgt = rng.integers(3, 40, (2, 9)).astype(np.int32), rng.integers(3, 40, (2, 9)).astype(np.int32)
    wide = dataclasses.replace(tiny_config, local_window=9)
    np.testing.assert_allclose(
        logits_of(wide, tiny_params, src, tgt), logits_of(tiny_config, tiny_params, src, tgt), atol=1e-6
    )
    local = dataclasses.replace(tiny_config, local_window=1, encoder_layers=1, decoder_layers=1)
    from t2t_jax.train.state import init_params

    params = init_params(local, 0)
    base = logits_of(local, params, src, tgt)
    changed = tgt.copy()
    changed[:, 0] = (changed[:, 0] % 30) + 4  # decoder input 1 changes; with one layer of window 1 ...
    out = logits_of(local, params, src, changed)
    assert not np.allclose(out[:, 1:3], base[:, 1:3])  # ... positions 1-2 see it
    np.testing.assert_allclose(out[:, 3:], base[:, 3:], atol=1e-6)  # positions >= 3 do not
    check_cached_decoding_is_exact(local, params, src)


def test_additive_equals_numpy_reference_and_works_in_the_model(tiny_config):
    from t2t_jax.model.attention_functions import additive
    from t2t_jax.train.state import init_params

    q, k, v = qkv(3)
    w = np.random.default_rng(4).normal(size=(3, 4)).astype(np.float32)
    segments = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)
    bias = attention_bias(segments, segments, causal=True)
    logits = np.einsum("bqkhd,hd->bhqk", np.tanh(q[:, :, None] + k[:, None]), w)
    logits = np.where(np.asarray(bias) == 0, logits, -1e30)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    want = np.einsum("bhqk,bkhd->bqhd", weights, v)
    got = np.asarray(additive(q, k, v, bias, v=w))
    real = segments.astype(bool)
    np.testing.assert_allclose(got[real], want[real], atol=1e-5)
    cfg = dataclasses.replace(tiny_config, attention="additive")
    params = init_params(cfg, 0)
    assert params["encoder"]["layer_0"]["self_attn"]["additive_v"].shape == (4, 8)


def test_additive_in_key_chunks_equals_the_whole_score_tensor_values_and_gradients():
    """The chunked scores (keys split into pieces, each rematerialised) are the one-tensor formula, forward and
    backward, for key lengths below, at and across the chunk size."""
    from t2t_jax.model import attention_functions as fns

    rng = np.random.default_rng(7)
    for keys in (5, fns.ADDITIVE_KEY_CHUNK, 2 * fns.ADDITIVE_KEY_CHUNK + 3):
        q = jnp.asarray(rng.normal(size=(2, 6, 3, 4)), jnp.float32)
        k = jnp.asarray(rng.normal(size=(2, keys, 3, 4)), jnp.float32)
        value = jnp.asarray(rng.normal(size=(2, keys, 3, 4)), jnp.float32)
        w = jnp.asarray(rng.normal(size=(3, 4)), jnp.float32)

        def whole(q, k, value, w):
            logits = jnp.einsum("bqkhd,hd->bhqk", jnp.tanh(q[:, :, None] + k[:, None]), w)
            return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(logits, axis=-1), value)

        def chunked(q, k, value, w):
            return fns.additive(q, k, value, None, v=w)

        np.testing.assert_allclose(chunked(q, k, value, w), whole(q, k, value, w), rtol=1e-6, atol=1e-6)
        loss = lambda f: lambda *a: (f(*a) ** 2).sum()  # noqa: E731
        got = jax.grad(loss(chunked), argnums=(0, 1, 2, 3))(q, k, value, w)
        want = jax.grad(loss(whole), argnums=(0, 1, 2, 3))(q, k, value, w)
        for g, h in zip(got, want):
            np.testing.assert_allclose(g, h, rtol=1e-5, atol=1e-5)


def test_relative_with_clip_zero_is_content_attention_plus_a_learned_constant():
    from t2t_jax.model.attention_functions import relative

    q, k, v = qkv(7)
    rng = np.random.default_rng(8)
    rel_key, rel_value = rng.normal(size=(1, 4)).astype(np.float32), rng.normal(size=(1, 4)).astype(np.float32)
    segments = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)
    bias = attention_bias(segments, segments, causal=True)
    got = np.asarray(relative(q, k, v, bias, rel_key=rel_key, rel_value=rel_value))
    want = np.asarray(dot_product(q, k, v, bias)) + rel_value[0]
    real = segments.astype(bool)
    np.testing.assert_allclose(got[real], want[real], atol=1e-5)


def test_relative_leaves_cross_attention_alone(tiny_config):
    from t2t_jax.train.state import init_params

    cfg = dataclasses.replace(tiny_config, attention="relative", positions="none", relative_clip=3)
    params = init_params(cfg, 2)
    assert "relative_key" in params["decoder"]["layer_0"]["self_attn"]
    assert "relative_key" not in params["decoder"]["layer_0"]["cross_attn"]


def test_per_sublayer_choice_and_named_aliases(tiny_config):
    from t2t_jax.errors import ConfigError
    from t2t_jax.train.state import init_params

    mixed = dataclasses.replace(
        tiny_config, attention="dot_product", decoder_self_attention="additive", cross_attention="dot_product_unscaled"
    )
    params = init_params(mixed, 0)
    assert "additive_v" in params["decoder"]["layer_0"]["self_attn"]
    assert "additive_v" not in params["encoder"]["layer_0"]["self_attn"]
    assert [mixed.attention_function(k) for k in ("encoder_self", "decoder_self", "cross")] == [
        "dot_product",
        "additive",
        "dot_product_unscaled",
    ]
    src = np.random.default_rng(10).integers(3, 40, (2, 6)).astype(np.int32)
    check_cached_decoding_is_exact(mixed, params, src)
    multi = dataclasses.replace(tiny_config, attention="multi_query")
    assert init_params(multi, 0)["encoder"]["layer_0"]["self_attn"]["key"]["kernel"].shape[1] == 1
    for bad, message in [
        ({"attention": "local"}, "needs model.local_window > 0"),
        ({"attention": "grouped_query"}, "needs 1 < model.kv_heads"),
        ({"cross_attention": "local"}, "cross_attention = 'local': must be one of"),
    ]:
        with pytest.raises(ConfigError, match=message):
            dataclasses.replace(tiny_config, **bad)
