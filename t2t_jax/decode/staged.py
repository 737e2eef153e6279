"""Decode a batch in stages that retire finished sentences, as CTranslate2 and fairseq do.

``decoder.translate_ids`` is one program: every sentence of a batch computes until the batch's last one ends;
on the Multi30k test set about a third of a beam-4 decode's row-steps were finished sentences
(bench/decode_anatomy.py). Here the same search (search.Search pieces) runs in segments, each a
``lax.while_loop`` that also stops once half the batch has finished or the cache must grow; between segments
the host keeps the finished sentences' outputs and gathers the ones still searching into a batch half the
size (or less). A sentence's search never reads another's, so the outputs are ``translate_ids``'s.

Each (rows, cache length, source length) shape compiles its own small program on first use, kept for the
process (and by the persistent compilation cache for later ones).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from t2t_jax.decode import search
from t2t_jax.decode.decoder import cached_step, check_beam, decode_length, empty_first_cache, encode_inputs
from t2t_jax.model import Transformer, decode_cache
from t2t_jax.model.config import ModelConfig

SMALLEST_ROWS = 4  # rows (sentences x beam): a batch this small is not halved (a smaller step is hardly cheaper)


class Sentences(NamedTuple):
    """What the decoder step reads of each sentence, sentence-major (gathered with the search state)."""

    encoded: jax.Array  # [batch, source_len, d_model]
    segments: jax.Array  # [batch, source_len]
    max_lengths: jax.Array  # [batch] int32: source length + 50 (§6.1)


def next_rows(rows: int, searching: int, smallest: int) -> int:
    """The sentences a stage of ``rows`` continues in once ``searching`` of them still search: ``rows`` until at
    most half do, then the smallest halving of ``rows`` that holds them, never below ``smallest`` (a batch that
    small is not halved)."""
    size = rows
    while searching <= size // 2 and size // 2 >= smallest:
        size //= 2
    return size


def _loop(params, sentences: Sentences, cfg: ModelConfig, beam: int, first_length: int = 0) -> search.SearchLoop:
    """The search's loop over the model's cached steps (``first_length``: the caches a step without one makes)."""
    model = Transformer(cfg)
    step, reorder, _ = cached_step(model, params, sentences.encoded, sentences.segments, first_length, beam)
    max_len = decode_length(cfg, sentences.segments.shape[1])
    batch = sentences.max_lengths.shape[0]
    return search.SearchLoop(step, batch, sentences.max_lengths, max_len, cfg.eos_id, cfg.pad_id, reorder_fn=reorder)


def _pieces(loop: search.SearchLoop, beam: int, alpha: float, nbest: int, stop: str) -> search.Search:
    return search.greedy(loop) if beam == 1 else search.beams(loop, beam, alpha, nbest, stop)


@functools.partial(jax.jit, static_argnames=("cfg", "beam", "alpha", "nbest", "stop", "first_length"))
def _begin(params, inputs, *, cfg: ModelConfig, beam: int, alpha: float, nbest: int, stop: str, first_length: int):
    """(Sentences, the carry before step 0): the encoder's work and empty caches of ``first_length`` positions."""
    segments, encoded, _, max_lengths = encode_inputs(Transformer(cfg), params, inputs, cfg)
    sentences = Sentences(encoded, segments, max_lengths)
    loop = _loop(params, sentences, cfg, beam, first_length)
    loop = loop._replace(first_cache=empty_first_cache(loop.step_fn, params, encoded, cfg, inputs.shape[0] * beam))
    pieces = _pieces(loop, beam, alpha, nbest, stop)
    return sentences, search.first_carry(loop, pieces, search.first_tokens(loop, beam))


@functools.partial(jax.jit, static_argnames=("cfg", "beam", "alpha", "nbest", "stop"))
def _segment(
    params, sentences: Sentences, carry, end, floor, *, cfg: ModelConfig, beam: int, alpha: float, nbest: int, stop: str
):
    """(carry, searching [batch] bool) after stepping while any sentence searches, ``t < end`` (the cache's
    bound) and more than ``floor`` sentences search."""
    loop = _loop(params, sentences, cfg, beam)
    pieces = _pieces(loop, beam, alpha, nbest, stop)

    def cond(c):
        return search.go_on(loop, pieces, c) & (c.state.t < end) & (jnp.sum(pieces.searching(c.state)) > floor)

    carry = jax.lax.while_loop(cond, lambda c: search.step_and_advance(loop, pieces, c), carry)
    return carry, pieces.searching(carry.state)


@functools.partial(jax.jit, static_argnames=("length", "beam"))
def _grow(carry, *, length: int, beam: int):
    return carry._replace(cache=decode_cache.grow(carry.cache, length, beam))


@functools.partial(jax.jit, static_argnames=("beam",))
def _take(sentences: Sentences, carry, keep, *, beam: int):
    """Sentences ``keep`` [new batch] of everything the search carries: leaves [batch, ...] or rows
    [batch * beam, ...] (the tokens the next step reads); the step count ``t`` as it is."""
    batch = sentences.max_lengths.shape[0]

    def take(leaf):
        if leaf.ndim == 0:
            return leaf
        if leaf.shape[0] == batch:
            return leaf[keep]
        return leaf.reshape(batch, beam, *leaf.shape[1:])[keep].reshape(-1, *leaf.shape[1:])

    return jax.tree_util.tree_map(take, (sentences, carry))


def _outputs(state) -> tuple:
    """(tokens [batch, k, max_len], scores [batch, k]) of a state, k = beam (greedy: 1), as translate_ids."""
    if isinstance(state, search.BeamState):
        return state.fin_seqs, state.fin_scores
    return state.tokens[:, None], state.score[:, None]


def translate_staged(
    params, inputs, *, cfg: ModelConfig, beam: int = 4, alpha: float = 0.6, nbest: int = 1, stop: str = "exact"
):
    """``decoder.translate_ids``'s outputs (numpy) for ``inputs`` [batch, source_len], finished sentences
    retired from the batch between segments (module docstring)."""
    check_beam(beam, nbest, stop)
    batch, source_len = inputs.shape
    max_len = decode_length(cfg, source_len)
    bounds = decode_cache.phases(cfg, batch, beam, max_len)
    statics = {"cfg": cfg, "beam": beam, "alpha": alpha, "nbest": nbest, "stop": stop}
    sentences, carry = _begin(params, inputs, first_length=bounds[0], **statics)
    owner = np.arange(batch)  # the input row each current row decodes (-1: a filler, never read)
    tokens = np.full((batch, 1 if beam == 1 else beam, max_len), cfg.pad_id, np.int32)
    scores = np.zeros(tokens.shape[:2], np.float32)

    def keep_outputs(state):
        done = owner >= 0
        state_tokens, state_scores = jax.device_get(_outputs(state))
        tokens[owner[done]], scores[owner[done]] = state_tokens[done], state_scores[done]

    smallest = max(1, SMALLEST_ROWS // beam)  # sentences
    phase = 0
    while True:
        rows = len(owner)
        floor = rows // 2 if next_rows(rows, rows // 2, smallest) < rows else -1  # the segment stops here
        carry, searching = _segment(params, sentences, carry, bounds[phase], floor, **statics)
        t, searching = jax.device_get((carry.state.t, searching))
        if t >= max_len or not searching.any():
            break
        if t >= bounds[phase]:
            phase += 1
            carry = _grow(carry, length=bounds[phase], beam=beam)
        live = np.flatnonzero(searching)
        size = next_rows(rows, len(live), smallest)
        if size < rows:
            keep_outputs(carry.state)
            filler = np.flatnonzero(~searching)[0]  # a finished sentence: it searches no more
            keep = np.concatenate([live, np.full(size - len(live), filler)])
            owner = np.concatenate([owner[live], np.full(size - len(live), -1)])
            sentences, carry = _take(sentences, carry, keep, beam=beam)
            if bounds[phase] < max_len and decode_cache.phases(cfg, size, beam, max_len) == (max_len,):
                bounds, phase = (max_len,), 0  # caches this small are read whole cheaply: one program fewer per phase
                carry = _grow(carry, length=max_len, beam=beam)
    keep_outputs(carry.state)
    return tokens, scores
