"""The two-pass top-k of the search equals ``lax.top_k`` over the materialised candidates, ties included."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from t2t_jax.decode.topk import CHUNK, chunk_size, log_softmax_top_k, top_k_rows


def reference(x, offset, k):
    batch, rows, n = x.shape
    return jax.lax.top_k((x + offset[..., None]).reshape(batch, rows * n), k)


@pytest.mark.parametrize(
    "rows,n,k,ties",
    [
        (4, 4 * CHUNK, 8, False),
        (4, 4 * CHUNK, 8, True),
        (1, 8 * CHUNK, 1, True),
        (2, 2 * CHUNK, 4, True),
        (3, 100, 6, False),
        (4, 8000, 8, True),  # the Multi30k vocabulary: chunks of 125
        (2, 1000, 4, False),  # chunks of 125
        (2, 1009, 4, True),  # prime: no chunk, one pass
    ],
)
def test_two_pass_top_k_equals_lax_top_k(rows, n, k, ties):
    rng = np.random.default_rng(rows * n + k)
    for trial in range(5):
        if ties:  # few distinct values: many equal candidates, within and across rows and chunks
            x = rng.integers(-3, 3, (6, rows, n)).astype(np.float32)
            offset = rng.integers(-1, 1, (6, rows)).astype(np.float32)
            # a few chunks spiked high, so the best chunks are not in position order and the rest of the
            # top k are ties that must come from the lowest positions
            flat, chunk = x.reshape(6, -1), chunk_size(n) or n
            for sentence in flat:
                spiked = rng.choice(rows * n // chunk, size=min(k // 2, 3), replace=False)
                sentence[spiked * chunk + rng.integers(0, chunk, spiked.shape)] = 10 + rng.permutation(len(spiked))
        else:
            x = rng.normal(size=(6, rows, n)).astype(np.float32) * 4
            offset = rng.normal(size=(6, rows)).astype(np.float32)
        if trial == 0:  # dead hypotheses (alive log-prob -1e9), as at the first beam step
            offset[:, 1:] = -1e9
        got = jax.jit(top_k_rows, static_argnums=2)(x, offset, k)
        want = jax.jit(reference, static_argnums=2)(x, offset, k)
        np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
        np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))


def test_chunk_size_is_the_divisor_nearest_the_preferred_chunk():
    assert (chunk_size(8 * CHUNK), chunk_size(8000), chunk_size(32000), chunk_size(1009)) == (CHUNK, 125, 128, None)
    assert all(n % chunk_size(n) == 0 for n in (100, 8000, 30522, 50257 * 2) if chunk_size(n))


@pytest.mark.parametrize("rows,n,k", [(4, 8 * CHUNK, 8), (1, 4 * CHUNK, 1), (3, 100, 6), (4, 8000, 8)])
def test_log_softmax_top_k_ranks_hypothesis_log_probabilities(rows, n, k):
    """prior + log_softmax(logits), ranked over rows and vocabulary: the same entries as ``lax.top_k`` on the
    materialised candidates, and the same log-probabilities."""
    rng = np.random.default_rng(n + k)
    x = (rng.normal(size=(5, rows, n)) * 3).astype(np.float32)
    prior = (rng.normal(size=(5, rows)) * 2).astype(np.float32)
    values, indices = jax.jit(log_softmax_top_k, static_argnums=2)(x, prior, k)
    candidates = (prior[..., None] + jax.nn.log_softmax(x, -1)).reshape(5, rows * n)
    want_values, want_indices = jax.lax.top_k(candidates, k)
    np.testing.assert_array_equal(np.asarray(indices), np.asarray(want_indices))
    np.testing.assert_allclose(np.asarray(values), np.asarray(want_values), rtol=1e-6, atol=1e-5)


def test_the_best_entry_in_the_last_chunk_is_found():
    """One high value per sentence in a chunk the first pass must pick (not the first chunks)."""
    x = jnp.zeros((2, 2, 4 * CHUNK)).at[0, 1, -1].set(5.0).at[1, 0, CHUNK + 3].set(7.0)
    values, indices = top_k_rows(x, jnp.zeros((2, 2)), 1)
    assert indices[:, 0].tolist() == [2 * 4 * CHUNK - 1, CHUNK + 3]
    assert values[:, 0].tolist() == [5.0, 7.0]


@pytest.mark.parametrize("beam", [1, 4])
def test_decoding_with_two_passes_equals_one_pass(monkeypatch, beam):
    """Whole translations (greedy and beam 4, n-best) of a 512-word model are the same whether the search
    ranks candidates in two passes (a chunk divides the vocabulary) or in one ``lax.top_k`` (no divisor in
    CHUNK_RANGE)."""
    from t2t_jax.decode import topk
    from t2t_jax.decode.decoder import translate_ids
    from t2t_jax.model import ModelConfig
    from t2t_jax.train.state import init_params

    cfg = ModelConfig(
        vocab_size=4 * CHUNK, d_model=32, num_heads=2, d_ff=64, encoder_layers=1, decoder_layers=1, max_len=40
    )
    params = init_params(cfg, seed=5)
    src = np.random.default_rng(0).integers(3, cfg.vocab_size, (3, 7)).astype(np.int32)

    def decode():
        return translate_ids(params, src, cfg=cfg, beam=beam, nbest=beam)

    assert topk.chunk_size(cfg.vocab_size) == CHUNK
    two_pass = decode()
    monkeypatch.setattr(topk, "CHUNK_RANGE", (4 * CHUNK + 1, 4 * CHUNK + 1))  # no divisor there: one lax.top_k
    assert topk.chunk_size(cfg.vocab_size) is None
    jax.clear_caches()  # jax caches traces by function and static arguments: trace again under the new range
    one_pass = decode()
    np.testing.assert_array_equal(np.asarray(two_pass[0]), np.asarray(one_pass[0]))
    np.testing.assert_array_equal(np.asarray(two_pass[1]), np.asarray(one_pass[1]))
