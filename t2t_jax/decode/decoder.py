"""Bind the model to the searches: encode once, cached steps over per-sentence beam groups, one jit per shape."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from t2t_jax.decode.search import beam_search, greedy_search
from t2t_jax.model import Transformer
from t2t_jax.model.attention import grow_self_caches, self_cache_positions
from t2t_jax.model.config import ModelConfig
from t2t_jax.model.masks import DecodeStep

EXTRA_LENGTH = 50  # §6.1: maximum output length = input length + 50
PHASE_START = 16  # steps in the first decode phase (see cache_phases)
PHASE_MIN_BYTES = 4 << 20  # one layer's self-attention caches below this: a single loop


def decode_length(cfg: ModelConfig, source_len: int) -> int:
    """Static cache / output length for a padded source length (capped by model.max_len)."""
    return min(source_len + EXTRA_LENGTH, cfg.max_len)


def _encode(model, params, inputs, cfg: ModelConfig):
    """(source segments, encoder output, static output length, per-sentence limits = length + 50)."""
    segments = (inputs != cfg.pad_id).astype(jnp.int32)
    encoded = model.apply({"params": params}, inputs, segments, method=Transformer.encode)
    max_len = decode_length(cfg, inputs.shape[1])
    return segments, encoded, max_len, jnp.minimum(segments.sum(-1) + EXTRA_LENGTH, max_len)


def cache_phases(cfg: ModelConfig, batch: int, beam: int, max_len: int):
    """Step bounds at which the self-attention caches grow (doubling from PHASE_START to ``max_len``), or
    (max_len,), one full-size loop, when a layer's caches are under PHASE_MIN_BYTES (reading them whole is cheap).

    At batch 64 × beam 4 a tiny model's caches are 18 MB a layer, read from memory at every step; with full
    buffers the early steps read mostly empty slots. Sized to the phase, a step reads < 2× what is written.
    Each phase compiles its own loop body, hence doubling (few phases) and the size threshold."""
    per_position = cfg.key_value_heads * (cfg.head_dim_k + cfg.head_dim_v) * jnp.dtype(cfg.dtype).itemsize
    layer_bytes = batch * max(beam, 1) * max_len * per_position
    if layer_bytes < PHASE_MIN_BYTES:
        return (max_len,)
    bounds = [PHASE_START]
    while bounds[-1] * 2 < max_len:
        bounds.append(bounds[-1] * 2)
    return tuple(b for b in bounds if b < max_len) + (max_len,)


def _cached_step(model, params, encoded, input_segments, first_length, beam):
    """(step_fn, reorder_fn, grow_fn) over the model's grouped caches: the search's cache is the model's
    "cache" collection plus the beam ancestry [batch, beam, length]; reordering updates only the ancestry.
    Caches are created for ``first_length`` positions; a step reads its length off the caches."""
    def step(cache, tokens, index):
        if cache is None:
            ancestry = jnp.zeros((encoded.shape[0], beam, first_length), jnp.int32) if beam > 1 else None
            variables, length = {"params": params}, first_length
        else:
            ancestry, variables = cache["ancestry"], {"params": params, "cache": cache["model"]}
            length = self_cache_positions(cache["model"], max(beam, 1))
        if ancestry is not None:  # position ``index`` of every hypothesis is written into its own slot
            ancestry = ancestry.at[:, :, index].set(jnp.arange(beam, dtype=jnp.int32))
        logits, mutated = model.apply(variables, encoded, input_segments, tokens,
                                      DecodeStep(index, length, max(beam, 1), ancestry),
                                      method=Transformer.decode_step, mutable=["cache"])
        return logits, {"model": mutated["cache"], "ancestry": ancestry}

    def reorder(cache, source_beams, index):
        """Hypothesis k now continues source_beams[:, k]: it inherits that hypothesis's ancestry."""
        if cache["ancestry"] is None:  # beam 1: one hypothesis per sentence, nothing to follow
            return cache
        return {"model": cache["model"],
                "ancestry": jnp.take_along_axis(cache["ancestry"], source_beams[:, :, None], 1)}

    def grow(cache, length):
        """Caches and ancestry enlarged to ``length`` positions (zero-padded; see grow_self_caches)."""
        ancestry = cache["ancestry"]
        if ancestry is not None:
            ancestry = jnp.pad(ancestry, ((0, 0), (0, 0), (0, length - ancestry.shape[-1])))
        return {"model": grow_self_caches(cache["model"], length, max(beam, 1)), "ancestry": ancestry}

    return step, reorder, grow


@functools.partial(jax.jit, static_argnames=("cfg", "beam", "alpha", "nbest"))
def translate_ids(params, inputs, *, cfg: ModelConfig, beam: int = 4, alpha: float = 0.6, nbest: int = 1):
    """Token ids [batch, beam, L] best first and their scores [batch, beam] (beam 0 = greedy search);
    the first ``nbest`` hypotheses are exact."""
    model = Transformer(cfg)
    segments, encoded, max_len, max_lengths = _encode(model, params, inputs, cfg)
    batch = inputs.shape[0]
    phases = cache_phases(cfg, batch, beam, max_len)
    step, reorder, grow = _cached_step(model, params, encoded, segments, phases[0], beam)
    if beam == 0:
        tokens, score = greedy_search(step, batch, max_lengths, max_len, cfg.eos_id, cfg.pad_id,
                                      phases=phases, grow_fn=grow)
        return tokens[:, None], score[:, None]
    return beam_search(step, batch, beam, alpha, max_lengths, max_len, cfg.eos_id, cfg.pad_id, nbest=nbest,
                       reorder_fn=reorder, phases=phases, grow_fn=grow)


@functools.partial(jax.jit, static_argnames=("cfg", "beam", "alpha", "nbest"))
def translate_uncached(params, inputs, *, cfg: ModelConfig, beam: int = 0, alpha: float = 0.6, nbest: int = 1):
    """The same searches re-running the full decoder on every hypothesis's whole prefix at every step
    (no cache; the reference the cached paths are tested against, and the benchmark's baseline)."""
    model = Transformer(cfg)
    segments, encoded, max_len, max_lengths = _encode(model, params, inputs, cfg)
    copies, batch = max(beam, 1), inputs.shape[0]
    rows = batch * copies
    encoded, inputs, segments = (jnp.repeat(x, copies, axis=0) for x in (encoded, inputs, segments))
    all_real = jnp.ones((rows, max_len), jnp.int32)

    def step(generated, last, index):
        """``generated`` [rows, max_len] plays the cache: the tokens so far, re-read in full every step."""
        generated = jnp.zeros((rows, max_len), jnp.int32) if generated is None else generated
        generated = jnp.where(index > 0, generated.at[:, index - 1].set(last), generated)
        logits = model.apply({"params": params}, encoded, inputs, generated, segments, all_real,
                             method=Transformer.decode)
        return logits[:, index], generated

    if beam == 0:
        tokens, score = greedy_search(step, batch, max_lengths, max_len, cfg.eos_id, cfg.pad_id)
        return tokens[:, None], score[:, None]
    return beam_search(step, batch, beam, alpha, max_lengths, max_len, cfg.eos_id, cfg.pad_id, nbest=nbest)
