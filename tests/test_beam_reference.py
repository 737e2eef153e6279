"""Beam search with the GNMT length penalty (α > 0) against a plain-Python beam search over the NumPy paper model
(tests/numpy_reference.py): no caches, no top-k chunks, no tensors; the rules are decode/search.py's docstring
(2k candidates, only the top k may finish, score log P / ((5 + |Y|) / 6)^α, stop when no alive hypothesis can
beat the best finished one, or with stop="beam_finished" once k hypotheses have finished)."""

import jax.numpy as jnp
import numpy as np
import pytest
from export_models import CFG, trained_params
from numpy_reference import logits as reference_logits

from t2t_jax.decode.decoder import translate_ids
from t2t_jax.decode.search import SearchLoop, beam_search


def log_softmax(x):
    x = x - x.max()
    return x - np.log(np.exp(x).sum())


def penalty(length, alpha):
    return ((5.0 + length) / 6.0) ** alpha


def reference_beam(next_logp_of, beam, alpha, max_length, eos=1, stop="exact"):
    """(best tokens, its score) for one sentence; ``next_logp_of(prefix)``: log-probabilities of the next token."""
    alive, finished, t, count = [(0.0, ())], [], 0, 0  # (log P, tokens); count: hypotheses finished so far
    while t < max_length:
        candidates = []
        for logp, seq in alive:  # in beam order, then token order: the index order jax's top_k breaks ties by
            next_logp = next_logp_of(seq)
            candidates += [(logp + next_logp[v], (*seq, v)) for v in range(len(next_logp))]
        candidates = sorted(candidates, key=lambda c: -c[0])[: 2 * beam]
        ends = [seq[-1] == eos or t + 1 >= max_length for _, seq in candidates]
        ended = [(lp / penalty(t + 1, alpha), seq) for r, (lp, seq) in enumerate(candidates) if ends[r] and r < beam]
        count += len(ended)
        finished = sorted(finished + ended, key=lambda f: -f[0])[:beam]
        alive = [c for c, end in zip(candidates, ends) if not end][:beam]
        t += 1
        if stop == "beam_finished" and count >= beam:
            break
        if not alive or (stop == "exact" and finished and alive[0][0] / penalty(max_length, alpha) <= finished[0][0]):
            break
    return finished[0][1], finished[0][0]


@pytest.mark.parametrize(("alpha", "stop"), [(0.6, "exact"), (1.5, "exact"), (1.5, "beam_finished")])
def test_beam_search_with_length_penalty_equals_a_plain_python_beam_search(alpha, stop):
    params = trained_params()
    rng = np.random.default_rng(3)
    sources = rng.integers(3, 40, (12, 10)).astype(np.int32)
    for row, length in enumerate(rng.integers(2, 11, len(sources))):  # lengths the model was not trained on
        sources[row, length - 1], sources[row, length:] = 1, 0  # (8): uncertain ends, own length limits
    tokens, scores = translate_ids(params, sources, cfg=CFG, beam=4, alpha=alpha, stop=stop)
    tokens, scores = np.asarray(tokens), np.asarray(scores)
    for row, source in enumerate(sources):
        length = int((source != 0).sum())
        source = [int(t) for t in source[:length]]
        next_logp_of = lambda seq, s=source: log_softmax(reference_logits(params, s, [*seq, 0])[-1])  # noqa: E731
        want, want_score = reference_beam(next_logp_of, 4, alpha, min(length + 50, 64), stop=stop)
        got = [int(t) for t in tokens[row, 0]]
        got = got[: got.index(1) + 1] if 1 in got else got[: len(want)]
        assert got == list(want), row
        assert scores[row, 0] == pytest.approx(want_score, rel=1e-4, abs=1e-4)


@pytest.mark.parametrize("stop", ["exact", "beam_finished"])
@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_beam_search_over_a_random_markov_model_equals_a_plain_python_beam_search(alpha, stop):
    """A next-token table [previous token, step, vocab] with EOS likely: many hypotheses finish at every rank,
    so which candidates may finish, the finished set's order and the stop rule all decide the result."""
    vocab, max_len, beam = 9, 12, 3
    rng = np.random.default_rng(0)
    table = rng.normal(0, 2.0, (vocab, max_len, vocab)).astype(np.float32)
    table[:, :, 1] += 1.0  # EOS (id 1)
    table[:, :, 0] = -1e9  # never the start/pad id
    batch = 16
    max_lengths = rng.integers(3, max_len + 1, batch).astype(np.int32)
    first = rng.integers(2, vocab, batch)  # each sentence's own table: a different start row per sentence

    def step_fn(cache, tokens, index):  # the cache only marks "after step 0"; the search reorders it
        previous = jnp.repeat(jnp.asarray(first), beam) if cache is None else tokens
        return jnp.asarray(table)[previous, index], jnp.zeros((batch * beam,)) if cache is None else cache

    loop = SearchLoop(step_fn, batch, jnp.asarray(max_lengths), max_len, eos_id=1)
    seqs, scores = beam_search(loop, beam, alpha, stop=stop)
    seqs, scores = np.asarray(seqs), np.asarray(scores)
    other_rule = "beam_finished" if stop == "exact" else "exact"
    differs = 0  # sentences whose result the other stop rule changes: the table must tell the rules apart
    for b in range(batch):

        def next_logp_of(seq, b=b):
            previous = seq[-1] if seq else first[b]
            return log_softmax(table[previous, len(seq)].astype(np.float64))

        want, want_score = reference_beam(next_logp_of, beam, alpha, int(max_lengths[b]), stop=stop)
        got = [int(t) for t in seqs[b, 0] if t != 0]  # 0 (start/pad) is never generated
        assert got == list(want), b
        assert scores[b, 0] == pytest.approx(want_score, rel=1e-5, abs=1e-5)
        differs += reference_beam(next_logp_of, beam, alpha, int(max_lengths[b]), stop=other_rule) != (
            want,
            want_score,
        )
    if alpha == 2.0:  # a strong length reward: later hypotheses beat the first k to finish, the rules part
        assert differs > 0
