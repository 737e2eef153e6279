"""The checks every attention variant goes through (test_variants.py runs them over the registry)."""

import numpy as np
import pytest

from t2t_jax.decode.decoder import translate_ids, translate_uncached
from t2t_jax.errors import ExportError
from t2t_jax.export.support import check_exportable
from t2t_jax.model import Transformer, variants
from t2t_jax.model.variants import EXPORT_FORMATS
from t2t_jax.train.state import init_params

ALIASES = {
    "multi_query": {"attention": "multi_query"},
    "grouped_query": {"attention": "grouped_query", "kv_heads": 2},
    "local": {"attention": "local", "local_window": 2},
}


def variant_settings(name):
    return ALIASES.get(name, {"attention": name})


def logits_of(cfg, params, src, tgt):
    return np.asarray(Transformer(cfg).apply({"params": params}, src, tgt))


def check_causal_and_padding_invariant(cfg, params):
    rng = np.random.default_rng(6)
    src, tgt = rng.integers(3, 40, (2, 6)).astype(np.int32), rng.integers(3, 40, (2, 7)).astype(np.int32)
    src[1, 4:] = 0
    base = logits_of(cfg, params, src, tgt)
    changed = tgt.copy()
    changed[:, 4:] = rng.integers(3, 40, (2, 3))
    np.testing.assert_allclose(logits_of(cfg, params, src, changed)[:, :5], base[:, :5], atol=1e-5)
    padded = logits_of(cfg, params, np.pad(src, ((0, 0), (0, 3))), np.pad(tgt, ((0, 0), (0, 2))))
    np.testing.assert_allclose(padded[:, :7], base, atol=1e-5)


def check_packed_equals_alone(cfg, params):
    from t2t_jax.data.packing import RowPacker

    rng = np.random.default_rng(11)
    packer = RowPacker(rows=1, length=24)
    examples = [
        (
            np.append(rng.integers(3, 40, n), 1).astype(np.int32),
            np.append(rng.integers(3, 40, n + 1), 1).astype(np.int32),
        )
        for n in (4, 6, 5)
    ]
    assert all(packer.add(s, t) for s, t in examples)
    batch = packer.batch
    packed = np.asarray(Transformer(cfg).apply({"params": params}, **batch))[0]
    for segment, (src, tgt) in enumerate(examples, start=1):
        alone = logits_of(cfg, params, src[None], tgt[None])[0]
        np.testing.assert_allclose(packed[batch["targets_segmentation"][0] == segment], alone, atol=2e-5)


def check_cached_decoding_is_exact(cfg, params, src=None):
    """Cached greedy and beam-3 search (grouped caches, ancestry masks) == the same searches re-running
    the full decoder on every hypothesis's prefix."""
    if src is None:
        src = np.random.default_rng(5).integers(3, 40, (2, 6)).astype(np.int32)
        src[1, 4:] = 0
    for beam in (1, 3):
        cached, cached_scores = translate_ids(params, src, cfg=cfg, beam=beam)
        full, full_scores = translate_uncached(params, src, cfg=cfg, beam=beam)
        np.testing.assert_array_equal(np.asarray(cached), np.asarray(full))
        np.testing.assert_allclose(np.asarray(cached_scores), np.asarray(full_scores), rtol=1e-4, atol=1e-4)


def check_exporters_follow_the_record(cfg):
    """A format accepts the config iff every sublayer's record lists it (and no window / shared kv heads)."""
    for fmt in EXPORT_FORMATS:
        supported = (
            all(fmt in cfg.attention_variant(kind).exporters for kind in variants.SUBLAYERS)
            and not cfg.local_window
            and cfg.key_value_heads == cfg.num_heads
        )
        if supported:
            check_exportable(cfg, fmt)
        else:
            with pytest.raises(ExportError, match=f"cannot export to {fmt}"):
                check_exportable(cfg, fmt)
    check_exportable(cfg, "safetensors")  # a params dump takes any variant


def check_variant(cfg, seed=1):
    params = init_params(cfg, seed)
    check_causal_and_padding_invariant(cfg, params)
    check_packed_equals_alone(cfg, params)
    check_cached_decoding_is_exact(cfg, params)
    check_exporters_follow_the_record(cfg)
    return params
