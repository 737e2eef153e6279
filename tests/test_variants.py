"""Attention variants as data: every registered variant (and config alias) through the same checks, a toy
variant that is one registry entry, and independent NumPy references for grouped-query and relative
attention."""

import dataclasses

import jax
import numpy as np
import pytest
from variant_checks import ALIASES, check_variant, logits_of, variant_settings

from t2t_jax.errors import ConfigError
from t2t_jax.model import attention_functions, variants
from t2t_jax.model.attention import MultiHeadAttention
from t2t_jax.model.flops import forward_flops
from t2t_jax.model.masks import attention_bias
from t2t_jax.model.variants import AttentionVariant, ExtraParam
from t2t_jax.train.state import init_params


@pytest.mark.parametrize("name", [*variants.names(), *ALIASES])
def test_every_variant_is_causal_padding_invariant_packable_cacheable_and_exported_as_its_record_says(
    tiny_config, name
):
    check_variant(dataclasses.replace(tiny_config, **variant_settings(name)))


def gated(query, key, value, bias, *, gate, dropout_rate=0.0, dropout_rng=None, deterministic=True, dtype="float32"):
    """The toy: eq. (1) with head h's output scaled by sigmoid(gate[h])."""
    out = attention_functions.dot_product(
        query,
        key,
        value,
        bias,
        dropout_rate=dropout_rate,
        dropout_rng=dropout_rng,
        deterministic=deterministic,
        dtype=dtype,
    )
    return (out * jax.nn.sigmoid(gate)[:, None]).astype(dtype)  # [b, q, h, d] * [h, 1]


@pytest.fixture
def toy_variant():
    """Adding a variant: this one entry (and its function above), nothing else."""
    variant = variants.register(
        AttentionVariant(
            "toy_gated",
            gated,
            params=(ExtraParam("toy_gate", "gate", lambda cfg: (cfg.num_heads,)),),
            summary="dot-product with a learned sigmoid gate per head",
        )
    )
    yield variant
    variants.unregister("toy_gated")


def test_a_toy_variant_is_one_registry_entry(tiny_config, toy_variant):
    cfg = dataclasses.replace(tiny_config, attention="toy_gated")
    params = check_variant(cfg)  # config validation, parameters, cached decoding and exporters pick it up
    assert params["encoder"]["layer_0"]["self_attn"]["toy_gate"].shape == (4,)
    opened = jax.tree_util.tree_map_with_path(
        lambda path, x: np.full_like(x, 30.0) if path[-1].key == "toy_gate" else x, params
    )  # sigmoid = 1
    plain = dataclasses.replace(tiny_config, attention="dot_product")
    src = np.random.default_rng(0).integers(3, 40, (2, 6)).astype(np.int32)
    np.testing.assert_allclose(logits_of(cfg, opened, src, src), logits_of(plain, params, src, src), atol=1e-5)
    mixed = dataclasses.replace(tiny_config, cross_attention="toy_gated")
    assert "toy_gate" in init_params(mixed, 0)["decoder"]["layer_0"]["cross_attn"]
    assert forward_flops(cfg, 1, 6, 6) == forward_flops(plain, 1, 6, 6)  # the default per-pair cost


def test_unknown_and_misplaced_variants_are_config_errors(tiny_config):
    with pytest.raises(ConfigError, match="model.attention = 'toy_gated': must be one of"):
        dataclasses.replace(tiny_config, attention="toy_gated")  # not registered outside its test
    with pytest.raises(ConfigError, match="cross_attention = 'relative': that variant is for"):
        dataclasses.replace(tiny_config, cross_attention="relative")
    with pytest.raises(ValueError, match="already registered"):
        variants.register(AttentionVariant("dot_product", attention_functions.dot_product))


def numpy_softmax(logits, allowed):
    logits = np.where(allowed, logits, -1e30)
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True)


@pytest.mark.parametrize("kv", [1, 2])
def test_grouped_and_multi_query_attention_equal_a_numpy_reference(tiny_config, kv):
    """Head h reads key/value head h // (heads / kv): the layer against projections and per-head
    softmax written out in NumPy."""
    cfg = dataclasses.replace(tiny_config, kv_heads=kv)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 32)).astype(np.float32)
    segments = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)
    bias = attention_bias(segments, segments)
    layer = MultiHeadAttention(cfg, kind="encoder_self")
    variables = layer.init(jax.random.PRNGKey(3), x, x, bias, None)
    got = np.asarray(layer.apply(variables, x, x, bias, None))
    p = jax.tree_util.tree_map(np.asarray, variables["params"])
    q = np.einsum("btd,dhk->bthk", x, p["query"]["kernel"])
    k = np.einsum("btd,dhk->bthk", x, p["key"]["kernel"])
    v = np.einsum("btd,dhk->bthk", x, p["value"]["kernel"])
    assert k.shape[2] == kv
    heads, groups = cfg.num_heads, cfg.num_heads // kv
    allowed = (segments[:, :, None] == segments[:, None, :]) & (segments[:, None, :] != 0)
    out = np.zeros(q.shape, np.float32)
    for h in range(heads):
        g = h // groups
        weights = numpy_softmax(np.einsum("bqd,bkd->bqk", q[:, :, h], k[:, :, g]) / np.sqrt(8), allowed)
        out[:, :, h] = np.einsum("bqk,bkd->bqd", weights, v[:, :, g])
    want = np.einsum("bthk,hkd->btd", out, p["out"]["kernel"])
    real = segments.astype(bool)
    np.testing.assert_allclose(got[real], want[real], atol=1e-5)


def relative_reference(q, k, v, rel_key, rel_value, allowed, clip, query_offset=0):
    """Shaw et al. (2018) eq. (3)-(5) written as loops: distance j - i clipped to [-clip, clip]."""
    batch, q_len, heads, d = q.shape
    out = np.zeros(q.shape, np.float64)
    for b in range(batch):
        for h in range(heads):
            for i in range(q_len):
                position = i + query_offset
                index = [min(max(j - position, -clip), clip) + clip for j in range(k.shape[1])]
                logits = np.array([q[b, i, h] @ (k[b, j, h] + rel_key[index[j]]) for j in range(k.shape[1])])
                weights = numpy_softmax(logits / np.sqrt(d), allowed[b, i])
                out[b, i, h] = sum(weights[j] * (v[b, j, h] + rel_value[index[j]]) for j in range(k.shape[1]))
    return out


def test_relative_attention_with_clipping_equals_a_hand_computed_reference():
    rng = np.random.default_rng(7)
    q, k, v = (rng.normal(size=(2, 6, 3, 4)).astype(np.float32) for _ in range(3))
    clip = 2  # distances up to ±5 occur: clipping matters
    rel_key, rel_value = (rng.normal(size=(2 * clip + 1, 4)).astype(np.float32) for _ in range(2))
    segments = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], np.int32)
    for causal in (False, True):
        bias = attention_bias(segments, segments, causal=causal)
        allowed = np.asarray(bias[:, 0]) == 0
        got = np.asarray(attention_functions.relative(q, k, v, bias, rel_key=rel_key, rel_value=rel_value))
        want = relative_reference(q, k, v, rel_key, rel_value, allowed, clip)
        real = segments.astype(bool)
        np.testing.assert_allclose(got[real], want[real], atol=1e-5)
    # one cached step: the query at position 4 alone, told its offset
    step = np.asarray(
        attention_functions.relative(
            q[:, 4:5], k, v, bias[:, :, 4:5], rel_key=rel_key, rel_value=rel_value, query_offset=4
        )
    )
    np.testing.assert_allclose(step[:, 0], got[:, 4], atol=1e-6)


def test_a_config_is_validated_without_importing_flax():
    """The registry is data: naming any variant (or a wrong one) needs jax, not Flax or model code."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from t2t_jax.errors import ConfigError\n"
        "from t2t_jax.model import variants\n"
        "from t2t_jax.model.config import ModelConfig\n"
        "[ModelConfig(attention=name) for name in variants.names()]\n"
        "try:\n    ModelConfig(attention='dot_prodcut')\nexcept ConfigError as e:\n    print(e)\n"
        "assert 'flax' not in sys.modules, 'flax was imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "model.attention = 'dot_prodcut': must be one of" in result.stdout
