"""Bind the model to the searches: encode once, cached steps over per-sentence beam groups, one jit per shape."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from t2t_jax.decode.search import beam_search, greedy_search
from t2t_jax.model import Transformer
from t2t_jax.model.config import ModelConfig
from t2t_jax.model.masks import DecodeStep

EXTRA_LENGTH = 50  # §6.1: maximum output length = input length + 50


def decode_length(cfg: ModelConfig, source_len: int) -> int:
    """Static cache / output length for a padded source length (capped by model.max_len)."""
    return min(source_len + EXTRA_LENGTH, cfg.max_len)


def _encode(model, params, inputs, cfg: ModelConfig):
    """(source segments, encoder output, static output length, per-sentence limits = length + 50)."""
    segments = (inputs != cfg.pad_id).astype(jnp.int32)
    encoded = model.apply({"params": params}, inputs, segments, method=Transformer.encode)
    max_len = decode_length(cfg, inputs.shape[1])
    return segments, encoded, max_len, jnp.minimum(segments.sum(-1) + EXTRA_LENGTH, max_len)


def _cached_step(model, params, encoded, input_segments, cache_length, beam):
    """(step_fn, reorder_fn) over the model's grouped caches: the search's cache is the model's "cache"
    collection plus the beam ancestry [batch, beam, length]; reordering updates only the ancestry."""
    def step(cache, tokens, index):
        if cache is None:
            ancestry = jnp.zeros((encoded.shape[0], beam, cache_length), jnp.int32) if beam > 1 else None
            variables = {"params": params}
        else:
            ancestry, variables = cache["ancestry"], {"params": params, "cache": cache["model"]}
        if ancestry is not None:  # position ``index`` of every hypothesis is written into its own slot
            ancestry = ancestry.at[:, :, index].set(jnp.arange(beam, dtype=jnp.int32))
        logits, mutated = model.apply(variables, encoded, input_segments, tokens,
                                      DecodeStep(index, cache_length, max(beam, 1), ancestry),
                                      method=Transformer.decode_step, mutable=["cache"])
        return logits, {"model": mutated["cache"], "ancestry": ancestry}

    def reorder(cache, source_beams, index):
        """Hypothesis k now continues source_beams[:, k]: it inherits that hypothesis's ancestry."""
        if cache["ancestry"] is None:  # beam 1: one hypothesis per sentence, nothing to follow
            return cache
        return {"model": cache["model"],
                "ancestry": jnp.take_along_axis(cache["ancestry"], source_beams[:, :, None], 1)}

    return step, reorder


@functools.partial(jax.jit, static_argnames=("cfg", "beam", "alpha", "nbest"))
def translate_ids(params, inputs, *, cfg: ModelConfig, beam: int = 4, alpha: float = 0.6, nbest: int = 1):
    """Token ids [batch, beam, L] best first and their scores [batch, beam] (beam 0 = greedy search);
    the first ``nbest`` hypotheses are exact."""
    model = Transformer(cfg)
    segments, encoded, max_len, max_lengths = _encode(model, params, inputs, cfg)
    batch = inputs.shape[0]
    step, reorder = _cached_step(model, params, encoded, segments, max_len, beam)
    if beam == 0:
        tokens, score = greedy_search(step, batch, max_lengths, max_len, cfg.eos_id, cfg.pad_id)
        return tokens[:, None], score[:, None]
    return beam_search(step, batch, beam, alpha, max_lengths, max_len, cfg.eos_id, cfg.pad_id, nbest=nbest,
                       reorder_fn=reorder)


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
