"""Feature-major decode products (model/feature_major.py) against the row-major step they replace."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from t2t_jax.decode.decoder import translate_ids
from t2t_jax.model import ModelConfig, Transformer, decode_cache, feature_major
from t2t_jax.train.state import init_params

CFG = ModelConfig(vocab_size=40, d_model=32, num_heads=4, d_ff=64, encoder_layers=2, decoder_layers=2, max_len=64)
VARIANTS = {
    "paper": {},
    "marian_like": {"attention_bias": True, "logits_bias": True, "activation": "swish", "ln": "pre"},
    "grouped_query_uneven_heads": {"attention": "grouped_query", "kv_heads": 2, "d_k": 6, "d_v": 10},
    "relative": {"attention": "relative", "positions": "none"},
}


def sources(rows, length=9, seed=0):
    src = np.random.default_rng(seed).integers(3, 40, (rows, length)).astype(np.int32)
    src[0, 5:] = 0
    src[0, 4] = 1
    return src


def noisy_params(cfg, seed):
    """init_params with every leaf perturbed: zero-initialised biases would hide a bias added at the wrong place."""
    params = init_params(cfg, seed=seed)
    leaves, tree = jax.tree_util.tree_flatten(params)
    keys = jax.random.split(jax.random.key(seed), len(leaves))
    leaves = [leaf + 0.1 * jax.random.normal(key, leaf.shape) for leaf, key in zip(leaves, keys)]
    return jax.tree_util.tree_unflatten(tree, leaves)


def decode_step_logits(cfg, params, collections, batch=3, beam=2, steps=3):
    """Logits [steps, batch * beam, vocab] of the first ``steps`` cached steps on fixed tokens, the model applied
    with ``collections`` besides params and cache."""
    model = Transformer(cfg)
    src = jnp.asarray(sources(batch))
    segments = (src != cfg.pad_id).astype(jnp.int32)
    encoded = model.apply({"params": params}, src, segments, method=Transformer.encode)
    tokens = jnp.asarray(np.random.default_rng(1).integers(3, cfg.vocab_size, (steps, batch * beam)), jnp.int32)
    # no reordering: every hypothesis's positions sit in its own beam slot
    ancestry = jnp.broadcast_to(jnp.arange(beam, dtype=jnp.int32)[None, :, None], (batch, beam, 8))
    cache, out = {}, []
    for index in range(steps):
        step = decode_cache.DecodeStep(jnp.int32(index), 8, beam, ancestry)
        variables = {"params": params, **collections, **({"cache": cache} if cache else {})}
        logits, mutated = model.apply(
            variables, encoded, segments, tokens[index], step, method=Transformer.decode_step, mutable=["cache"]
        )
        cache = mutated["cache"]
        out.append(logits)
    return jnp.stack(out)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_feature_major_step_gives_the_row_major_steps_logits(variant):
    """Every product of a cached step (q/k/v stacked, attention outputs, cross-attention query, FFN, tied output
    projection, with biases where the model has them) computed from decoder_weights' transposed copies gives
    the logits of the model's own row-major products, step after step (the caches they write agree too)."""
    cfg = dataclasses.replace(CFG, **VARIANTS[variant])
    params = noisy_params(cfg, seed=4)
    weights = feature_major.decoder_weights(params, cfg)
    row_major = decode_step_logits(cfg, params, {})
    features = decode_step_logits(cfg, params, {feature_major.COLLECTION: weights})
    np.testing.assert_allclose(np.asarray(features), np.asarray(row_major), rtol=2e-5, atol=2e-5)
    assert np.abs(np.asarray(row_major)).max() > 1.0  # the comparison is not between near-zero logits


def test_a_feature_major_step_in_bfloat16_stays_within_rounding_of_the_row_major_one():
    """In bfloat16 the copies are made in the compute dtype: the same inputs rounded the same way, products
    accumulated in float32, so logits agree to a few bf16 ulps of their size."""
    cfg = dataclasses.replace(CFG, dtype="bfloat16")
    params = noisy_params(cfg, seed=6)
    weights = feature_major.decoder_weights(params, cfg)
    assert all(leaf.dtype == jnp.bfloat16 for leaf in jax.tree_util.tree_leaves(weights))
    row_major = np.asarray(decode_step_logits(cfg, params, {}))
    features = np.asarray(decode_step_logits(cfg, params, {feature_major.COLLECTION: weights}))
    np.testing.assert_allclose(features, row_major, atol=0.05 * np.abs(row_major).max())


@pytest.mark.parametrize("variant,beam", [("paper", 1), ("paper", 4), ("grouped_query_uneven_heads", 4)])
def test_searches_find_the_same_translations_either_way(monkeypatch, variant, beam):
    """translate_ids with every row count feature-major against every row count row-major: the same n-best
    and scores. The feature-major program is the one traced (its step reads the transposed copies)."""
    cfg = dataclasses.replace(CFG, **VARIANTS[variant])
    params = noisy_params(cfg, seed=2)
    src = sources(3)

    def decode(rows):
        monkeypatch.setattr(feature_major, "ROWS", rows)
        # a new function per call: traced afresh under the patch
        run = jax.jit(lambda p, s: translate_ids.__wrapped__(p, s, cfg=cfg, beam=beam, nbest=beam))
        barriers = str(jax.make_jaxpr(run)(params, src)).count("optimization_barrier")
        return run(params, src), barriers

    (tokens, scores), barriers = decode(range(1, 1000))
    (row_tokens, row_scores), row_barriers = decode(range(0))
    assert barriers > 0 and row_barriers == 0
    np.testing.assert_array_equal(np.asarray(tokens), np.asarray(row_tokens))
    np.testing.assert_allclose(np.asarray(scores), np.asarray(row_scores), rtol=1e-5, atol=1e-5)
    assert (np.asarray(tokens)[..., 3:] != 0).any()  # searches that ran some steps, not all EOS at once


def test_the_programs_rows_and_the_backend_choose_the_layout(monkeypatch):
    """On CPU one row (a matrix-vector product) and many rows stay row-major, a few rows go feature-major; on an
    accelerator every program stays row-major."""
    assert [feature_major.wanted(rows) for rows in (1, 2, 4, 32, 33, 128)] == [False, True, True, True, False, False]
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert not any(feature_major.wanted(rows) for rows in (2, 4, 32))


def transposes(jaxpr) -> int:
    """transpose equations anywhere in ``jaxpr`` and the jaxprs nested in its equations."""
    count = 0
    for eqn in jaxpr.eqns:
        count += eqn.primitive.name == "transpose"
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                sub = getattr(sub, "jaxpr", sub)
                if hasattr(sub, "eqns"):
                    count += transposes(sub)
    return count


def test_the_translate_paths_copies_are_made_once_per_params_and_decode_as_copies_made_in_the_program():
    """with_copies makes the copies once per params object (a second call returns the same tree), keeps the
    last KEPT params, and a decoding program given them makes none of its own: fewer transposes in its
    program, the same translations."""
    params = noisy_params(CFG, seed=8)
    prepared = feature_major.with_copies(params, CFG)
    assert feature_major.with_copies(params, CFG) is prepared
    plain, copies = feature_major.split(prepared)
    assert plain.keys() == params.keys() and feature_major.split(params) == (params, None)
    expected = feature_major.decoder_weights(params, CFG)
    for made, wanted in zip(jax.tree_util.tree_leaves(copies), jax.tree_util.tree_leaves(expected)):
        np.testing.assert_array_equal(np.asarray(made), np.asarray(wanted))

    src = sources(2)
    decode = lambda p: translate_ids.__wrapped__(p, src, cfg=CFG, beam=2)  # noqa: E731  (4 rows: feature-major)
    made_inside = transposes(jax.make_jaxpr(decode)(params).jaxpr)
    given = transposes(jax.make_jaxpr(decode)(prepared).jaxpr)
    assert given <= made_inside - 4 * CFG.decoder_layers  # qkv, self out, cross query and out, FFN: no copies made
    for ours, theirs in zip(translate_ids(prepared, src, cfg=CFG, beam=2), translate_ids(params, src, cfg=CFG, beam=2)):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))

    others = [init_params(CFG, seed=seed) for seed in range(feature_major.KEPT)]
    for other in others:
        feature_major.with_copies(other, CFG)
    assert feature_major.with_copies(others[-1], CFG) is feature_major.with_copies(others[-1], CFG)
    assert feature_major.with_copies(params, CFG) is not prepared  # pushed out by KEPT newer params: made again
