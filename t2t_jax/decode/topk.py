"""Exact top-k of the search's candidates, read from the logits in two passes.

Each decoding step ranks, per sentence, the beam × vocab candidates ``logits[b, r, v] + offset[b, r]``
(offset = the hypothesis's log-probability minus its log-normaliser, so the candidate is the hypothesis's
new log-probability). XLA:CPU's ``top_k`` over the materialised [64, 4 × 8192] candidates took as long as
the whole output projection (docs/decoding.md; bench/profile_decode.py). Here the logits are read for the
maxima of chunks of ``chunk_size(vocab)`` entries (offset added per chunk: rounding is monotone, so
max(x) + c == max(x + c) exactly), the k best chunks are picked, and ``top_k`` runs over their k × chunk
entries only; the log-normaliser reuses the chunk maxima (one more read of the logits, for the exp-sum).

Exact, ties included: a top-k entry's chunk has a maximum at least as good, and chunk maxima are distinct
entries ordered as ``lax.top_k`` orders entries (value, then lower index), so every top-k entry lies in one
of the k best chunks; those are re-sorted by position so the last pass breaks ties by lower original
index, as ``lax.top_k`` does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

CHUNK = 128  # the preferred chunk; a vocabulary it does not divide uses its divisor nearest CHUNK (8000: 125)
CHUNK_RANGE = (64, 256)  # divisors considered; a vocabulary with none here is ranked in one pass


def chunk_size(n: int) -> int | None:
    """The chunk length for rows of ``n`` entries: the divisor of n in CHUNK_RANGE nearest CHUNK (ties: the
    larger), or None. Exactness does not depend on it; the last pass reads k * chunk entries."""
    divisors = [d for d in range(CHUNK_RANGE[0], CHUNK_RANGE[1] + 1) if n % d == 0]
    return min(divisors, key=lambda d: (abs(d - CHUNK), -d)) if divisors else None


def top_k_rows(x, offset, k: int):
    """(values, indices) of the ``k`` largest of ``(x + offset[..., None])`` flattened over its last two
    axes: x [batch, rows, n], offset [batch, rows] -> [batch, k] each, index = row * n + column."""
    return _top_k(x, offset, k, None)


def log_softmax_top_k(logits, prior, k: int):
    """The ``k`` best of ``prior[b, r] + log_softmax(logits[b, r])[v]`` over (r, v), as ``top_k_rows``; the
    log-normaliser's maximum comes from the chunk maxima, so the logits are read twice (maxima, exp-sum)
    rather than three times."""
    return _top_k(logits, prior, k, logsumexp_offset=True)


def _top_k(x, offset, k, logsumexp_offset):
    batch, rows, n = x.shape
    chunk = chunk_size(n)
    if chunk is None or rows * n < 2 * k * chunk:  # no chunk divides the vocabulary, or few chunks
        if logsumexp_offset:
            offset = offset - jax.nn.logsumexp(x, -1)
        return jax.lax.top_k((x + offset[..., None]).reshape(batch, rows * n), k)
    chunk_maxima = x.reshape(batch, rows, n // chunk, chunk).max(-1)
    if logsumexp_offset:  # log sum exp(x) = m + log sum exp(x - m), m the row maximum (as jax.nn.logsumexp)
        row_max = chunk_maxima.max(-1)
        offset = offset - (row_max + jnp.log(jnp.exp(x - row_max[..., None]).sum(-1)))
    chunks = x.reshape(batch, rows * (n // chunk), chunk)
    maxima = (chunk_maxima + offset[..., None]).reshape(batch, -1)
    _, best = jax.lax.top_k(maxima, k)
    best = jnp.sort(best, axis=-1)  # position order: the last pass breaks ties by lower index
    chunk_offset = jnp.take_along_axis(offset, best // (n // chunk), axis=-1)
    picked = jnp.take_along_axis(chunks, best[..., None], axis=1) + chunk_offset[..., None]  # [batch, k, chunk]
    values, within = jax.lax.top_k(picked.reshape(batch, k * chunk), k)
    chosen = jnp.take_along_axis(best, within // chunk, axis=-1)
    return values, (chosen * chunk + within % chunk).astype(jnp.int32)
