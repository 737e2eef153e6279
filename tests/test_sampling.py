"""Sampling: temperature 0 and top-k 1 are greedy search; the first token's empirical distribution over many draws
is the model's softmax (whole, top-k cut, nucleus cut: chi-square tests, fixed seed); a seed gives the same
samples across runs and batch compositions; the command's flags."""

import subprocess
import sys

import numpy as np
import pytest
from export_models import CFG, trained_params
from scipy import stats

from t2t_jax.decode.decoder import sample_ids, sample_keys, translate_ids
from t2t_jax.errors import ConfigError
from t2t_jax.model import Transformer
from t2t_jax.train.state import init_params


def sources(rows=6, seed=0):
    src = np.random.default_rng(seed).integers(3, 40, (rows, 8)).astype(np.int32)
    src[:, -1] = 1
    return src


@pytest.mark.parametrize("cut", [{"temperature": 0.0}, {"top_k": 1}, {"temperature": 1e-4}])
def test_temperature_zero_top_k_one_and_a_tiny_temperature_are_greedy_search(cut):
    params, src = trained_params(), sources()
    greedy_tokens, greedy_scores = translate_ids(params, src, cfg=CFG, beam=1)
    tokens, scores = sample_ids(params, src, sample_keys(7, range(6), [0] * 6), cfg=CFG, **cut)
    np.testing.assert_array_equal(np.asarray(tokens), np.asarray(greedy_tokens))
    np.testing.assert_allclose(np.asarray(scores), np.asarray(greedy_scores), rtol=1e-5, atol=1e-5)


def first_token_distribution(params, source, temperature=1.0):
    """The model's softmax over the first target token (one teacher-forced forward), at ``temperature``."""
    target = np.full((1, 1), 3, np.int32)  # any real token: position 0 reads only the start token (a pad target
    logits = np.asarray(Transformer(CFG).apply({"params": params}, source[None], target))[0, 0]  # would be masked)
    logits = logits.astype(np.float64) / temperature
    p = np.exp(logits - logits.max())
    return p / p.sum()


def cut_distribution(p, top_k=0, top_p=1.0):
    """The distribution sampling should follow: ``p`` cut to its k most likely tokens, then to the smallest set
    of most likely tokens whose probability reaches top_p, renormalised (written out independently)."""
    order = np.argsort(-p, kind="stable")
    keep = np.zeros_like(p, bool)
    total = 0.0
    for rank, token in enumerate(order):
        if (top_k and rank >= top_k) or total >= top_p:
            break
        keep[token] = True
        total += p[token]
    q = np.where(keep, p, 0.0)
    return q / q.sum()


@pytest.mark.parametrize(
    "cut", [{}, {"temperature": 0.7}, {"top_k": 5}, {"top_p": 0.6}], ids=["plain", "temperature", "top_k", "top_p"]
)
def test_first_tokens_over_many_draws_follow_the_models_softmax(cut):
    """8000 draws of the first token for one sentence (random weights: a spread-out distribution), against the
    expected counts: a chi-square test at p < 0.001 (seeded, so the outcome is fixed)."""
    params = init_params(CFG, seed=1)
    source = sources(1)[0]
    draws = 8000
    tokens, _ = sample_ids(
        params, np.repeat(source[None], draws, 0), sample_keys(11, [0] * draws, range(draws)), cfg=CFG, **cut
    )
    observed = np.bincount(np.asarray(tokens)[:, 0, 0], minlength=CFG.vocab_size)
    p = first_token_distribution(params, source, cut.get("temperature", 1.0))
    q = cut_distribution(p, cut.get("top_k", 0), cut.get("top_p", 1.0))
    assert observed[q == 0].sum() == 0  # nothing outside the cut is ever drawn
    expected = q * draws * observed.sum() / (q * draws).sum()  # float sums equal to the counts' total
    big = expected >= 5  # chi-square needs expected counts of at least ~5: pool the rare tokens
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp).pvalue > 1e-3, (obs, exp)


def test_a_seed_gives_the_same_samples_across_runs_and_batch_compositions(tmp_path):
    params, src = trained_params(), sources()
    keys = sample_keys(3, range(6), [0] * 6)
    first, _ = sample_ids(params, src, keys, cfg=CFG)
    again, _ = sample_ids(params, src, keys, cfg=CFG)
    np.testing.assert_array_equal(np.asarray(first), np.asarray(again))
    # the same (line, draw) keys in another batch: rows reversed, and alone
    reversed_rows, _ = sample_ids(params, src[::-1], sample_keys(3, range(5, -1, -1), [0] * 6), cfg=CFG)
    np.testing.assert_array_equal(np.asarray(reversed_rows)[::-1], np.asarray(first))
    alone, _ = sample_ids(params, src[2:3], sample_keys(3, [2], [0]), cfg=CFG)
    np.testing.assert_array_equal(np.asarray(alone)[0], np.asarray(first)[2])
    other, _ = sample_ids(params, src, sample_keys(4, range(6), [0] * 6), cfg=CFG)
    assert not np.array_equal(np.asarray(other), np.asarray(first))  # another seed, other samples


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"temperature": -1.0}, "--temperature -1.0: need >= 0"),
        ({"top_k": -2}, "--top-k -2"),
        ({"top_p": 0.0}, "--top-p 0.0"),
    ],
)
def test_bad_sampling_settings_are_one_clear_error(bad, message):
    with pytest.raises(ConfigError, match=message):
        sample_ids(trained_params(), sources(1), sample_keys(0, [0], [0]), cfg=CFG, **bad)


@pytest.mark.slow
def test_translate_command_samples_reproducibly_with_its_flags(tmp_path):
    """--sample --nbest 3: three draws per line, the same for the same seed whatever --tokens-per-batch."""
    from test_end_to_end import train_reversal_workdir

    import t2t_jax

    workdir = train_reversal_workdir(tmp_path, steps=20)
    lines = "a b c\n\nd e f g\nh i\n"

    def sample(*extra):
        result = subprocess.run(
            [sys.executable, "-m", "t2t_jax", "translate", "--workdir", str(workdir), "--sample"]
            + ["--nbest", "3", "--top-k", "10", "--temperature", "0.9", *extra],
            input=lines,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()

    first = sample("--seed", "5")
    assert len(first) == 4 and first[1] == "\t".join(["", "0.0000"] * 3)  # the empty line stays in place
    assert all(len(line.split("\t")) == 6 for line in first)
    assert sample("--seed", "5", "--tokens-per-batch", "16") == first  # other batches, the same draws
    translator = t2t_jax.Translator.from_workdir(workdir)
    api = translator.translate(lines.splitlines(), sample=True, nbest=3, top_k=10, temperature=0.9, seed=5)
    assert [[h.text for h in line] for line in api.hypotheses] == [line.split("\t")[0::2] for line in first]
    assert sample("--seed", "6") != first
