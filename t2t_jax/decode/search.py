"""Greedy and beam search over a generic step function, all inside ``lax.while_loop``.

Every search takes a ``SearchLoop``: ``step_fn(cache, tokens [rows], index) -> (logits [rows, vocab], cache)``;
``cache`` is None on the first call (which creates it), so step 0 runs before the loop and the
loop carries a cache of fixed structure — unless the loop is given ``first_cache``,
the cache step 0 would find: then step 0 is the loop's first iteration and the
program holds one copy of the step fewer to compile.  Sequences hold generated tokens only
(the start token is implicit); ``max_lengths`` [batch] caps each sentence
(source length + 50 in §6.1).

Beam search (§6.1, GNMT length penalty): score = log P(Y) / ((5 + |Y|) / 6)^α with
|Y| counting the EOS; 2k candidates per step so k can finish and k stay alive (only EOS
candidates ranked within the top k finish, as in fairseq / HF generate);
stops once no alive hypothesis can beat the best finished one (``stop="exact"``, tensor2tensor's rule: nothing the
beam could still finish would rank first), or once k hypotheses have finished (``stop="beam_finished"``: the rule
of fairseq, CTranslate2 and HF ``generate(early_stopping=True)``; fewer steps, but a longer hypothesis that would
have overtaken them under α > 0 is not waited for). With k = 1 this is greedy search at α = 0 only: with α > 0
a finished hypothesis's score rises with its length, so the search may extend the best non-EOS candidate past an
EOS greedy would take. The decoder therefore runs ``greedy_search`` for beam 1.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from t2t_jax.decode.topk import log_softmax_top_k

NEG_INF = -1e9
STOP_RULES = ("exact", "beam_finished")  # beam search's stop rules (module docstring)


class GreedyState(NamedTuple):
    t: Any  # steps taken (scalar int32)
    tokens: jax.Array  # [batch, max_len] int32: generated so far, start_id (= pad) after EOS
    finished: jax.Array  # [batch] bool
    score: jax.Array  # [batch] float32: summed log-probs


class BeamState(NamedTuple):
    t: Any  # steps taken (scalar int32)
    alive_seqs: jax.Array  # [batch, beam, max_len] int32: hypotheses still growing
    alive_logp: jax.Array  # [batch, beam] float32: their log P (NEG_INF: empty slot)
    fin_seqs: jax.Array  # [batch, beam, max_len] int32: finished hypotheses, best first
    fin_scores: jax.Array  # [batch, beam] float32: their length-normalised scores (NEG_INF: none yet)


class LoopCarry(NamedTuple):
    state: Any  # GreedyState or BeamState
    cache: Any  # whatever step_fn carries (decode_cache.SearchCache for the model)
    last: jax.Array  # [rows] int32: the tokens the next step reads


def length_penalty(length, alpha: float):
    return ((5.0 + jnp.asarray(length, jnp.float32)) / 6.0) ** alpha


def _gather_beams(tree, indices):
    """tree leaves [batch, k, ...] -> [batch, len(indices[b]), ...] picking beams ``indices`` [batch, m]."""
    return jax.tree_util.tree_map(
        lambda x: jnp.take_along_axis(x, indices.reshape(indices.shape + (1,) * (x.ndim - 2)), axis=1), tree
    )


def gather_rows(cache, source_beams):
    """The generic reorder: every cache leaf has rows [batch * beam, ...]; row (b, k) takes the row of
    its source beam. (The model's grouped caches move nothing; see decoder.py.)"""
    batch, beam = source_beams.shape
    rows = (jnp.arange(batch)[:, None] * beam + source_beams).reshape(-1)
    return jax.tree_util.tree_map(lambda leaf: leaf[rows], cache)


class SearchLoop(NamedTuple):
    """What every search loops over: the model's step and cache plumbing, the batch and its length limits.
    ``phases`` / ``grow_fn``: see ``run_loop``; ``first_cache``: see the module docstring; ``reorder_fn(cache,
    source_beams [batch, beam])`` makes a beam search's cache follow the surviving hypotheses."""

    step_fn: Any
    batch: int
    max_lengths: Any  # [batch] int32: each sentence's cap (source length + 50, §6.1)
    max_len: int  # static: the longest output
    eos_id: int
    start_id: int = 0  # the start token, also written after EOS (= pad)
    phases: tuple | None = None
    grow_fn: Any = None
    first_cache: Any = None
    reorder_fn: Any = gather_rows


class Search(NamedTuple):
    """One search's pieces over a SearchLoop: ``run_search`` runs them as one program; decode/staged.py runs
    them in stages that retire finished sentences from the batch (every leaf of a state but ``t`` is
    sentence-major, so a sentence's search never reads another's)."""

    state: Any  # the state before step 0
    advance: Any  # (state, cache, logits) -> LoopCarry
    searching: Any  # (state) -> [batch] bool: the sentences whose search goes on
    result: Any  # (state) -> the outputs, sentence-major


def first_carry(loop: SearchLoop, search: Search, first_tokens) -> LoopCarry:
    """The loop's first carry: after step 0 run here (``first_cache`` None: the step creates the cache),
    or before step 0, which the loop then runs."""
    if loop.first_cache is None:
        logits, cache = loop.step_fn(None, first_tokens, 0)
        return search.advance(search.state, cache, logits)
    return LoopCarry(search.state, loop.first_cache, first_tokens)


def step_and_advance(loop: SearchLoop, search: Search, carry: LoopCarry) -> LoopCarry:
    """One decoder step of every row, then the search's move."""
    logits, cache = loop.step_fn(carry.cache, carry.last, carry.state.t)
    return search.advance(carry.state, cache, logits)


def go_on(loop: SearchLoop, search: Search, carry: LoopCarry):
    """Whether any sentence still searches (and the longest output is not reached)."""
    return (carry.state.t < loop.max_len) & jnp.any(search.searching(carry.state))


def run_search(loop: SearchLoop, search: Search, first_tokens):
    """The search as one program: step and advance while any sentence searches, in the loop's phases."""
    carry = first_carry(loop, search, first_tokens)
    carry = run_loop(
        lambda c: go_on(loop, search, c),
        lambda c: step_and_advance(loop, search, c),
        carry,
        loop.phases or (loop.max_len,),
        loop.grow_fn,
    )
    return search.result(carry.state)


def greedy_search(loop: SearchLoop):
    """(tokens [batch, max_len], summed log-probs [batch]); positions after EOS hold ``start_id`` (= pad)."""
    return run_search(loop, greedy(loop), first_tokens(loop, 1))


def first_tokens(loop: SearchLoop, beam: int):
    """[batch * beam] start tokens: what step 0 reads."""
    return jnp.full((loop.batch * beam,), loop.start_id, jnp.int32)


def greedy(loop: SearchLoop) -> Search:
    """Greedy search's pieces: the most likely token at every step."""

    def most_likely(logits, _t):
        logp, choice = log_softmax_top_k(logits[:, None], jnp.zeros((logits.shape[0], 1)), 1)
        return choice[:, 0], logp[:, 0]

    return token_by_token(loop, most_likely)


def token_by_token(loop: SearchLoop, choose) -> Search:
    """One hypothesis per row, extended by ``choose(logits [batch, vocab] float32, t) -> (tokens [batch],
    their log-probs [batch])`` until every row has ended (EOS or its length limit)."""
    start_id = loop.start_id

    def advance(state: GreedyState, cache, logits) -> LoopCarry:
        choice, logp = choose(logits.astype(jnp.float32), state.t)
        choice = jnp.where(state.finished, start_id, choice)
        score = state.score + jnp.where(state.finished, 0.0, logp)
        tokens = state.tokens.at[:, state.t].set(choice)
        finished = state.finished | (choice == loop.eos_id) | (state.t + 1 >= loop.max_lengths)
        return LoopCarry(GreedyState(state.t + 1, tokens, finished, score), cache, choice)

    empty = jnp.full((loop.batch, loop.max_len), start_id, jnp.int32)
    state = GreedyState(0, empty, jnp.zeros((loop.batch,), bool), jnp.zeros((loop.batch,)))
    return Search(state, advance, lambda state: ~state.finished, lambda state: (state.tokens, state.score))


def sampling_search(loop: SearchLoop, keys, *, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0):
    """(tokens [batch, max_len], summed model log-probs [batch]): each row draws its next token from the model's
    distribution at ``temperature``, cut to the ``top_k`` most likely tokens (0: all) and to the smallest set
    whose probability reaches ``top_p`` (nucleus; 1: all). Row r's draw at step t uses fold_in(keys[r], t), so a
    row's sample depends on its key alone, not on the batch around it. ``temperature`` 0 is greedy search. The
    score is the model's own log-probability of the sample (temperature 1, no cut)."""
    if temperature == 0:
        return greedy_search(loop)

    def sample(logits, t):
        scaled = logits / temperature
        if top_k:
            kth = jax.lax.top_k(scaled, top_k)[0][:, -1:]
            scaled = jnp.where(scaled < kth, -jnp.inf, scaled)
        if top_p < 1.0:
            ordered = jnp.sort(scaled, axis=-1)[:, ::-1]  # [batch, vocab], most likely first
            probs = jax.nn.softmax(ordered, axis=-1)
            before = jnp.cumsum(probs, axis=-1) - probs  # the probability of the tokens ranked above each one
            cut = jnp.min(jnp.where(before < top_p, ordered, jnp.inf), axis=-1, keepdims=True)  # the last kept
            scaled = jnp.where(scaled < cut, -jnp.inf, scaled)
        step_keys = jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, t)
        choice = jax.vmap(jax.random.categorical)(step_keys, scaled).astype(jnp.int32)
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits, axis=-1), choice[:, None], axis=-1)[:, 0]
        return choice, logp

    search = token_by_token(loop, sample)
    return run_search(loop, search, first_tokens(loop, 1))


def beam_search(loop: SearchLoop, beam: int, alpha: float, nbest: int = 1, stop: str = "exact"):
    """(sequences [batch, beam, max_len], scores [batch, beam]) best first; rows of step_fn are batch*beam.

    ``stop="exact"``: stops once no alive hypothesis can beat the ``nbest``-th finished one (nbest=1: the
    best, §6.1); the first ``nbest`` rows are then exact, later rows are whatever finished before the stop.
    ``stop="beam_finished"``: stops once ``beam`` hypotheses have finished (fairseq, CTranslate2), the best
    ``nbest`` of them first."""
    return run_search(loop, beams(loop, beam, alpha, nbest, stop), first_tokens(loop, beam))


def beams(loop: SearchLoop, beam: int, alpha: float, nbest: int = 1, stop: str = "exact") -> Search:
    """Beam search's pieces (beam_search)."""
    batch, max_lengths, eos_id = loop.batch, loop.max_lengths, loop.eos_id

    def advance(state: BeamState, cache, logits) -> LoopCarry:
        t, vocab = state.t, logits.shape[-1]
        logits = logits.astype(jnp.float32).reshape(batch, beam, vocab)
        # candidate (k, v): log P(hypothesis k) + log_softmax(logits[k])[v], ranked without materialising it
        top_logp, top_index = log_softmax_top_k(logits, state.alive_logp, 2 * beam)
        source_beam, token = top_index // vocab, (top_index % vocab).astype(jnp.int32)
        seqs = _gather_beams(state.alive_seqs, source_beam).at[:, :, t].set(token)  # [batch, 2k, max_len]
        ends = (token == eos_id) | (t + 1 >= max_lengths)[:, None]
        # Only the top k of the 2k candidates may finish (as fairseq and HF generate): so at α = 0, k = 1 is
        # exactly greedy; the other k keep k hypotheses alive when some of the top k end.
        in_beam = jnp.arange(2 * beam)[None, :] < beam
        finished_score = jnp.where(ends & in_beam, top_logp / length_penalty(t + 1, alpha), NEG_INF)
        alive_candidates = jnp.where(ends, NEG_INF, top_logp)
        alive_logp, keep = jax.lax.top_k(alive_candidates, beam)
        alive_seqs = _gather_beams(seqs, keep)
        cache = loop.reorder_fn(cache, jnp.take_along_axis(source_beam, keep, axis=1))
        all_seqs = jnp.concatenate([state.fin_seqs, seqs], axis=1)  # [batch, 3k, max_len]
        all_scores = jnp.concatenate([state.fin_scores, finished_score], axis=1)
        fin_scores, best = jax.lax.top_k(all_scores, beam)
        last = jnp.take_along_axis(token, keep, axis=1).reshape(-1)
        return LoopCarry(
            BeamState(t + 1, alive_seqs, alive_logp, _gather_beams(all_seqs, best), fin_scores), cache, last
        )

    first_alive = jnp.where(jnp.arange(beam) == 0, 0.0, NEG_INF)  # one live beam at t=0: no duplicates
    empty = jnp.full((batch, beam, loop.max_len), loop.start_id, jnp.int32)  # after EOS: start_id (= pad)
    state = BeamState(0, empty, jnp.tile(first_alive, (batch, 1)), empty, jnp.full((batch, beam), NEG_INF))

    def can_improve(state: BeamState):
        if stop == "beam_finished":  # fin_scores hold the best `beam` finished: full once `beam` have finished
            return (state.fin_scores[:, beam - 1] < NEG_INF / 2) & (state.t < max_lengths)
        best_possible = state.alive_logp[:, 0] / length_penalty(max_lengths, alpha)
        return (best_possible > state.fin_scores[:, nbest - 1]) & (state.t < max_lengths)

    return Search(state, advance, can_improve, lambda state: (state.fin_seqs, state.fin_scores))


def run_loop(cond, body, carry: LoopCarry, phases, grow_fn=None) -> LoopCarry:
    """``lax.while_loop`` over a LoopCarry, split at the increasing step
    bounds ``phases`` (the last one max_len; default: that one loop): before the loop that ends at bound
    ``end``, ``grow_fn(cache, end)`` enlarges the cache to hold ``end`` positions. Each loop then runs on
    caches sized to its bound, so a step reads at most the next bound's worth of cache, not the whole."""
    for i, end in enumerate(phases):
        if i:
            carry = carry._replace(cache=grow_fn(carry.cache, end))
        carry = jax.lax.while_loop(lambda c, end=end: cond(c) & (c.state.t < end), body, carry)
    return carry
