"""Label-smoothed cross-entropy and metrics as *sums* plus a token count.

Sums, not means: the caller divides once by the global non-pad count (summed
across devices and hosts), which is right under uneven padding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def loss_sums(logits, targets, weights, label_smoothing: float):
    """Smoothed CE, NLL, correct predictions and token count, each summed over weighted positions.

    The smoothed target puts 1-ε on the label and ε/(V-1) on every other class.
    Computed from logsumexp without materialising log-probabilities.
    """
    logits = logits.astype(jnp.float32)
    vocab = logits.shape[-1]
    weights = weights.astype(jnp.float32)
    lse = jax.nn.logsumexp(logits, axis=-1)
    label_logit = jnp.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    nll = lse - label_logit
    sum_logp = logits.sum(-1) - vocab * lse  # Σ_v log p_v
    off_label = -(sum_logp) - nll  # -Σ_{v≠y} log p_v
    eps = label_smoothing
    smoothed = (1.0 - eps) * nll + (eps / (vocab - 1)) * off_label
    correct = (jnp.argmax(logits, axis=-1) == targets).astype(jnp.float32)
    return {
        "loss": jnp.sum(smoothed * weights),
        "nll": jnp.sum(nll * weights),
        "correct": jnp.sum(correct * weights),
        "tokens": jnp.sum(weights),
    }


def summarize(sums) -> dict:
    """Host-side metrics from summed values: smoothed loss, NLL, perplexity, accuracy per token."""
    tokens = max(float(sums["tokens"]), 1.0)
    nll = float(sums["nll"]) / tokens
    return {
        "loss": float(sums["loss"]) / tokens,
        "nll": nll,
        "ppl": float(jnp.exp(min(nll, 50.0))),
        "accuracy": float(sums["correct"]) / tokens,
        "tokens": float(sums["tokens"]),
    }
