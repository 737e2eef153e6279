"""Label-smoothed loss and metrics against a NumPy brute force over explicit target distributions."""

import numpy as np
import pytest

from t2t_jax.train.loss import loss_sums, summarize


def brute_force(logits, targets, weights, eps):
    vocab = logits.shape[-1]
    total, nll_total, correct = 0.0, 0.0, 0.0
    for b in range(logits.shape[0]):
        for t in range(logits.shape[1]):
            if weights[b, t] == 0:
                continue
            z = logits[b, t].astype(np.float64)
            logp = z - np.log(np.sum(np.exp(z - z.max()))) - z.max()
            q = np.full(vocab, eps / (vocab - 1))
            q[targets[b, t]] = 1 - eps
            total += -np.sum(q * logp)
            nll_total += -logp[targets[b, t]]
            correct += float(np.argmax(z) == targets[b, t])
    return total, nll_total, correct, weights.sum()


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.2])
def test_smoothed_loss_matches_brute_force(eps):
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 5, 11)).astype(np.float32) * 3
    targets = rng.integers(3, 11, size=(3, 5))
    targets[0, 3:] = 0  # padding
    targets[2, 1:] = 0
    weights = (targets != 0).astype(np.float32)
    sums = loss_sums(logits, targets, weights, eps)
    loss, nll, correct, tokens = brute_force(logits, targets, weights, eps)
    assert float(sums["loss"]) == pytest.approx(loss, rel=1e-5)
    assert float(sums["nll"]) == pytest.approx(nll, rel=1e-5)
    assert float(sums["correct"]) == correct
    assert float(sums["tokens"]) == tokens == 9


def test_summary_reports_nll_ppl_accuracy_separately():
    metrics = summarize({"loss": 12.0, "nll": 8.0, "correct": 3.0, "tokens": 4.0})
    assert metrics["loss"] == 3.0 and metrics["nll"] == 2.0 and metrics["accuracy"] == 0.75
    assert metrics["ppl"] == pytest.approx(np.exp(2.0), rel=1e-6)
