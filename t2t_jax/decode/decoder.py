"""Bind the model to the searches: encode once, repeat per beam, cached steps, one jit per shape."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from t2t_jax.decode.search import beam_search, greedy_search
from t2t_jax.model import Transformer
from t2t_jax.model.config import ModelConfig

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


def _step_fn(model, params, encoded, input_segments, cache_length):
    def step(cache, tokens, index):
        variables = {"params": params} if cache is None else {"params": params, "cache": cache}
        logits, mutated = model.apply(variables, encoded, input_segments, tokens, index, cache_length,
                                      method=Transformer.decode_step, mutable=["cache"])
        return logits, mutated["cache"]

    return step


@functools.partial(jax.jit, static_argnames=("cfg", "beam", "alpha", "nbest"))
def translate_ids(params, inputs, *, cfg: ModelConfig, beam: int = 4, alpha: float = 0.6, nbest: int = 1):
    """Token ids [batch, beam, L] best first and their scores [batch, beam] (beam 0 = greedy search);
    the first ``nbest`` hypotheses are exact."""
    model = Transformer(cfg)
    segments, encoded, max_len, max_lengths = _encode(model, params, inputs, cfg)
    batch = inputs.shape[0]
    if beam == 0:
        step = _step_fn(model, params, encoded, segments, max_len)
        tokens, score = greedy_search(step, batch, max_lengths, max_len, cfg.eos_id, cfg.pad_id)
        return tokens[:, None], score[:, None]
    encoded, segments = jnp.repeat(encoded, beam, axis=0), jnp.repeat(segments, beam, axis=0)
    step = _step_fn(model, params, encoded, segments, max_len)
    return beam_search(step, batch, beam, alpha, max_lengths, max_len, cfg.eos_id, cfg.pad_id, nbest=nbest)


@functools.partial(jax.jit, static_argnames=("cfg",))
def greedy_uncached(params, inputs, *, cfg: ModelConfig):
    """Greedy decoding by re-running the full decoder on the whole prefix every step (reference/bench)."""
    model = Transformer(cfg)
    segments, encoded, max_len, max_lengths = _encode(model, params, inputs, cfg)
    batch = inputs.shape[0]
    all_real = jnp.ones((batch, max_len), jnp.int32)

    def step(generated, last, index):
        """``generated`` [batch, max_len] plays the cache: the tokens so far, re-read in full every step."""
        generated = jnp.zeros((batch, max_len), jnp.int32) if generated is None else generated
        generated = jnp.where(index > 0, generated.at[:, index - 1].set(last), generated)
        logits = model.apply({"params": params}, encoded, inputs, generated, segments, all_real,
                             method=Transformer.decode)
        return logits[:, index], generated

    tokens, score = greedy_search(step, batch, max_lengths, max_len, cfg.eos_id, cfg.pad_id)
    return tokens[:, None], score[:, None]
