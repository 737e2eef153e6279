"""Model behaviour: causality, padding invariance, positions, parameter names, mixed precision."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax.traverse_util import flatten_dict

from t2t_jax.model import Transformer, positions, precision
from t2t_jax.train.state import init_params


def logits_of(cfg, params, inputs, targets, **kw):
    return np.asarray(Transformer(cfg).apply({"params": params}, jnp.asarray(inputs), jnp.asarray(targets), **kw))


def random_tokens(rng, shape, vocab):
    return rng.integers(3, vocab, size=shape).astype(np.int32)


@pytest.mark.parametrize("ln", ["post", "pre"])
def test_causality(tiny_config, ln):
    cfg = dataclasses.replace(tiny_config, ln=ln)
    params = init_params(cfg, seed=1)
    rng = np.random.default_rng(0)
    inputs, targets = random_tokens(rng, (2, 7), 40), random_tokens(rng, (2, 9), 40)
    base = logits_of(cfg, params, inputs, targets)
    for t in range(9):
        changed = targets.copy()
        changed[:, t:] = random_tokens(rng, (2, 9 - t), 40)
        out = logits_of(cfg, params, inputs, changed)
        # logits at position p depend on targets[:p] (shifted right), so positions <= t are unchanged.
        np.testing.assert_allclose(out[:, : t + 1], base[:, : t + 1], atol=1e-5)
        if t < 8:
            assert not np.allclose(out[:, t + 1 :], base[:, t + 1 :], atol=1e-5)


@pytest.mark.parametrize("positions_kind", ["sinusoidal", "concat", "learned"])
def test_padding_invariance(tiny_config, positions_kind):
    cfg = dataclasses.replace(tiny_config, positions=positions_kind)
    params = init_params(cfg, seed=2)
    rng = np.random.default_rng(1)
    inputs, targets = random_tokens(rng, (3, 6), 40), random_tokens(rng, (3, 5), 40)
    inputs[1, 4:] = 0
    targets[2, 3:] = 0
    base = logits_of(cfg, params, inputs, targets)
    padded_inputs = np.pad(inputs, ((0, 0), (0, 5)))
    padded_targets = np.pad(targets, ((0, 0), (0, 4)))
    out = logits_of(cfg, params, padded_inputs, padded_targets)
    real = targets != 0
    np.testing.assert_allclose(out[:, :5][real], base[real], atol=1e-5)


def test_dropout_changes_outputs_and_eval_is_deterministic(tiny_config, tiny_params):
    inputs = np.full((2, 5), 5, np.int32)
    a = logits_of(tiny_config, tiny_params, inputs, inputs)
    b = logits_of(tiny_config, tiny_params, inputs, inputs)
    np.testing.assert_array_equal(a, b)
    rngs = {"dropout": jax.random.PRNGKey(3)}
    c = logits_of(tiny_config, tiny_params, inputs, inputs, deterministic=False, rngs=rngs)
    assert not np.allclose(a, c)


def test_sinusoid_table_is_the_paper_formula():
    d = 16
    table = positions.sinusoidal_table(50, d)
    for p in (0, 1, 7, 49):
        for i in range(d // 2):
            assert table[p, 2 * i] == pytest.approx(math.sin(p / 10000 ** (2 * i / d)), abs=1e-6)
            assert table[p, 2 * i + 1] == pytest.approx(math.cos(p / 10000 ** (2 * i / d)), abs=1e-6)


def test_concat_table_is_t2t_formula():
    d = 16
    table = positions.concat_table(30, d)
    half = d // 2
    for p in (0, 3, 29):
        for i in range(half):
            timescale = 10000 ** (i / (half - 1))
            assert table[p, i] == pytest.approx(math.sin(p / timescale), abs=1e-6)
            assert table[p, half + i] == pytest.approx(math.cos(p / timescale), abs=1e-6)


def test_explicit_parameter_names(tiny_config, tiny_params):
    names = set(flatten_dict(tiny_params, sep="/"))
    for name in [
        "embed/embedding",
        "encoder/layer_1/self_attn/query/kernel",
        "encoder/layer_0/ln_attn/scale",
        "encoder/layer_0/ffn/wi/kernel",
        "encoder/layer_0/ffn/wo/bias",
        "decoder/layer_1/cross_attn/out/kernel",
        "decoder/layer_0/ln_self/bias",
        "decoder/layer_0/ln_cross/scale",
        "decoder/layer_0/ln_ffn/scale",
    ]:
        assert name in names, name
    assert not any("Dense_" in n or "_0/" in n.replace("layer_0/", "") for n in names)
    assert not any(n.endswith("query/bias") for n in names)  # no q/k/v/o biases
    pre = init_params(dataclasses.replace(tiny_config, ln="pre"), seed=0)
    assert {"encoder/ln_final/scale", "decoder/ln_final/scale"} <= set(flatten_dict(pre, sep="/"))


def test_initialisation_scales():
    from t2t_jax.model import ModelConfig

    cfg = ModelConfig(vocab_size=4000, d_model=256, num_heads=4, d_ff=1024, encoder_layers=1, decoder_layers=1)
    flat = flatten_dict(init_params(cfg, seed=0), sep="/")
    assert np.std(flat["embed/embedding"]) == pytest.approx(256**-0.5, rel=0.02)
    # Glorot uniform on the 2-D view: var = 2 / (fan_in + fan_out).
    q = flat["encoder/layer_0/self_attn/query/kernel"]
    assert q.shape == (256, 4, 64)
    assert np.var(q) == pytest.approx(2 / (256 + 256), rel=0.05)
    wi = flat["encoder/layer_0/ffn/wi/kernel"]
    assert np.var(wi) == pytest.approx(2 / (256 + 1024), rel=0.05)


def test_bf16_einsum_gradients_match_float32():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(2, 8, 16)), jnp.float32)
    w = jnp.asarray(rng.normal(size=(16, 4, 8)), jnp.float32)

    def f(dtype):
        return lambda a, b: jnp.sum(precision.einsum("btd,dhk->bthk", a, b, dtype, jnp.float32) ** 2)

    ref = jax.grad(f("float32"), argnums=(0, 1))(x, w)
    low = jax.grad(f("bfloat16"), argnums=(0, 1))(x, w)
    for r, g in zip(ref, low):
        assert g.dtype == jnp.float32
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=0.05, atol=0.05 * np.abs(r).max())
    lowered = jax.jit(jax.grad(f("bfloat16"), argnums=(0, 1))).lower(x, w).as_text()
    dots = [line for line in lowered.splitlines() if "dot_general" in line]
    assert len(dots) == 3  # forward + two gradient matmuls, all bf16 x bf16 -> f32
    assert all("bf16>, tensor<" in line and line.rstrip().endswith("xf32>") for line in dots), dots


def test_bf16_model_matches_float32(tiny_config, tiny_params):
    rng = np.random.default_rng(5)
    inputs, targets = random_tokens(rng, (2, 6), 40), random_tokens(rng, (2, 6), 40)
    ref = logits_of(tiny_config, tiny_params, inputs, targets)
    low = logits_of(dataclasses.replace(tiny_config, dtype="bfloat16"), tiny_params, inputs, targets)
    assert low.dtype == np.float32
    rounded = np.asarray(jnp.asarray(low).astype(jnp.bfloat16).astype(jnp.float32))
    assert np.mean(low != rounded) > 0.9  # accumulated and returned in float32, never rounded through bf16
    # bf16 matmul inputs cost ~2^-8 relative per product; measured max error 0.022 on logits up to 2.9 (2^-7)
    np.testing.assert_allclose(low, ref, atol=2.0**-6 * np.abs(ref).max())


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_dropout_keeps_units_by_example_and_rescales_them_exactly(dtype):
    """Kept units are x / (1 - rate) rounded once to the compute dtype (not divided by a rounded 0.9:
    in bf16 that is 0.8984375); about ``rate`` of the units are zeroed; a row's mask depends on its
    example id only, so the same example dropped in another batch at another row loses the same units."""
    from t2t_jax.model.layers import Dropout

    rate, rows, width = 0.1, 8, 4096
    x = jnp.asarray(np.random.default_rng(0).normal(size=(rows, width)) + 3.0).astype(dtype)
    ids = jnp.arange(rows, dtype=jnp.int32) + 100

    def drop(x, ids):
        out = Dropout(rate).apply({}, x, ids, rngs={"dropout": jax.random.PRNGKey(1)})
        return np.asarray(out.astype(jnp.float32))

    out = drop(x, ids)
    kept = out != 0  # x is never 0 here (mean 3)
    exact = np.asarray((x.astype(jnp.float32) / np.float32(1 - rate)).astype(dtype).astype(jnp.float32))
    np.testing.assert_array_equal(out[kept], exact[kept])
    dropped = 1 - kept.mean()
    assert abs(dropped - rate) < 5 * np.sqrt(rate * (1 - rate) / kept.size)  # binomial, 5 sigma
    f32 = np.asarray(x.astype(jnp.float32))
    assert abs(out.sum() / f32.sum() - 1) < 0.01  # unbiased: E[dropout(x)] = x
    swapped = drop(x[::-1][:3], ids[::-1][:3])  # rows 7, 6, 5 alone, in another order
    np.testing.assert_array_equal(swapped, out[::-1][:3])
    assert Dropout(rate).apply({}, x, None) is x  # evaluation: untouched


def test_attention_weight_dropout_zeroes_weights_and_rescales_the_rest():
    from t2t_jax.model.attention_functions import softmax_weights

    logits = jnp.asarray(np.random.default_rng(2).normal(size=(4, 2, 16, 16)), jnp.float32)
    plain = np.asarray(jax.nn.softmax(logits, -1))
    rows = jnp.arange(4, dtype=jnp.int32)
    got = np.asarray(softmax_weights(logits, None, 0.25, (jax.random.PRNGKey(0), rows), False))
    kept = got != 0
    np.testing.assert_allclose(got[kept], plain[kept] / 0.75, rtol=1e-6)
    assert abs((1 - kept.mean()) - 0.25) < 5 * np.sqrt(0.25 * 0.75 / kept.size)
    np.testing.assert_array_equal(np.asarray(softmax_weights(logits, None, 0.25, None, True)), plain)
