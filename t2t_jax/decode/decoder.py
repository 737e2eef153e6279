"""Bind the model to the searches: encode once, cached steps over per-sentence beam groups, one jit per shape."""

from __future__ import annotations

import concurrent.futures
import functools
import threading

import jax
import jax.numpy as jnp

from t2t_jax.decode.search import STOP_RULES, SearchLoop, beam_search, greedy_search, sampling_search
from t2t_jax.errors import ConfigError
from t2t_jax.model import Transformer, decode_cache, feature_major
from t2t_jax.model.attention import MultiHeadAttention
from t2t_jax.model.config import ModelConfig
from t2t_jax.model.decode_cache import SearchCache

EXTRA_LENGTH = 50  # §6.1: maximum output length = input length + 50


def decode_length(cfg: ModelConfig, source_len: int) -> int:
    """Static cache / output length for a padded source length (capped by model.max_len)."""
    return min(source_len + EXTRA_LENGTH, cfg.max_len)


def check_beam(beam: int, nbest: int = 1, stop: str = "exact") -> None:
    """Beam 1 is greedy search; there is no other spelling of greedy."""
    if beam < 1:
        raise ConfigError(f"--beam {beam}: need beam >= 1 (1 = greedy search)")
    if not 1 <= nbest <= beam:
        raise ConfigError(f"--nbest {nbest}: need 1 <= nbest <= beam ({beam})")
    if stop not in STOP_RULES:
        raise ConfigError(f"--stop {stop!r}: beam search stops by one of {', '.join(STOP_RULES)}")


def encode_inputs(model, params, inputs, cfg: ModelConfig):
    """(source segments, encoder output, static output length, per-sentence limits = length + 50)."""
    segments = (inputs != cfg.pad_id).astype(jnp.int32)
    encoded = model.apply({"params": params}, inputs, segments, method=Transformer.encode)
    max_len = decode_length(cfg, inputs.shape[1])
    return segments, encoded, max_len, jnp.minimum(segments.sum(-1) + EXTRA_LENGTH, max_len)


def cached_step(model, params, encoded, input_segments, first_length, beam):
    """(step_fn, reorder_fn, grow_fn) of the searches over the model's grouped caches (decode_cache.py):
    the caches are created for ``first_length`` positions on the first step; a later step reads its length
    off them. At few rows the step computes its products feature-major, from weight copies ``params`` carries
    (feature_major.with_copies) or made here, outside the search loop (feature_major.py)."""
    batch = encoded.shape[0]
    params, copies = feature_major.split(params)  # copies: made once per params by the translate path
    fixed = {"params": params}
    if feature_major.wanted(batch * beam):
        fixed[feature_major.COLLECTION] = (
            feature_major.decoder_weights(params, model.config) if copies is None else copies
        )

    def step(cache, tokens, index):
        where = decode_cache.step_of(cache, index, beam, batch, first_length)
        variables = fixed if cache is None else {**fixed, "cache": cache.model}
        logits, mutated = model.apply(
            variables, encoded, input_segments, tokens, where, method=Transformer.decode_step, mutable=["cache"]
        )
        return logits, SearchCache(mutated["cache"], where.ancestry)

    return step, decode_cache.reorder, lambda cache, length: decode_cache.grow(cache, length, beam)


def empty_first_cache(step, params, encoded, cfg: ModelConfig, rows: int):
    """The cache step 0 would create, built without a decoder step: zero buffers of the shapes step 0
    makes (traced, not run), each layer's cross-attention keys/values projected by its own module. Step 0
    then runs inside the search loop, and a compiled decoder holds one copy of the step fewer per program
    (compilation is most of a cold start; bench/decode_engines.py)."""
    shapes = jax.eval_shape(lambda: step(None, jnp.full((rows,), cfg.pad_id, jnp.int32), 0)[1])
    cross = {}
    for path in decode_cache.cross_modules(shapes):
        module_params = functools.reduce(lambda tree, name: tree[name], path, params)
        _, mutated = MultiHeadAttention(cfg, kind="cross").apply(
            {"params": module_params}, None, encoded, None, None, decode="cross_cache", mutable=["cache"]
        )
        cross[path] = mutated["cache"]
    return decode_cache.start(shapes, cross)


def _search(loop: SearchLoop, beam: int, alpha, nbest: int, stop: str):
    """Greedy search for beam 1, else beam search; (tokens [batch, beam or 1, L], scores [batch, beam or 1])."""
    if beam == 1:
        tokens, score = greedy_search(loop)
        return tokens[:, None], score[:, None]
    return beam_search(loop, beam, alpha, nbest, stop)


@functools.partial(jax.jit, static_argnames=("cfg", "beam", "alpha", "nbest", "stop", "phased"))
def translate_ids(
    params,
    inputs,
    *,
    cfg: ModelConfig,
    beam: int = 4,
    alpha: float = 0.6,
    nbest: int = 1,
    stop: str = "exact",
    phased: bool = True,
):
    """Token ids [batch, beam, L] best first and their scores [batch, beam]; beam 1 is greedy search
    (summed log-probs, no length penalty: with one hypothesis there is nothing to rank). The first ``nbest``
    hypotheses are exact (``stop``: search.STOP_RULES). ``phased`` False: one loop over full-size caches
    instead of decode_cache.phases' loops, the same outputs for half the compile time and slower steps (for a
    shape that decodes one batch)."""
    check_beam(beam, nbest, stop)
    return _search(_model_search(params, inputs, cfg, beam, phased), beam, alpha, nbest, stop)


def _model_search(params, inputs, cfg: ModelConfig, beam: int, phased: bool = True) -> SearchLoop:
    """The searches' loop over one model's cached steps for ``inputs``."""
    model = Transformer(cfg)
    segments, encoded, max_len, max_lengths = encode_inputs(model, params, inputs, cfg)
    rows = inputs.shape[0] * beam
    phases = decode_cache.phases(cfg, inputs.shape[0], beam, max_len) if phased else (max_len,)
    step, reorder, grow = cached_step(model, params, encoded, segments, phases[0], beam)
    first = empty_first_cache(step, params, encoded, cfg, rows)
    return SearchLoop(step, inputs.shape[0], max_lengths, max_len, cfg.eos_id, cfg.pad_id, phases, grow, first, reorder)


@functools.partial(jax.jit, static_argnames=("cfgs", "beam", "alpha", "nbest", "stop"))
def ensemble_ids(
    params, inputs, *, cfgs: tuple, beam: int = 4, alpha: float = 0.6, nbest: int = 1, stop: str = "exact"
):
    """``translate_ids`` for an ensemble: ``params`` and ``cfgs`` are tuples, one entry per model (models that
    share a vocabulary and special ids; ``check_ensemble``). At each step the search reads the mean of the
    models' log-probabilities (renormalised by the search's log-softmax); each model keeps its own caches,
    side by side, reordered together."""
    check_beam(beam, nbest, stop)
    check_ensemble(cfgs)
    models = [Transformer(cfg) for cfg in cfgs]
    encodings = [encode_inputs(m, p, inputs, c) for m, p, c in zip(models, params, cfgs)]
    segments = encodings[0][0]
    max_len = min(e[2] for e in encodings)  # the shortest position table among the models
    max_lengths = jnp.minimum(encodings[0][3], max_len)
    batch = inputs.shape[0]
    phases = decode_cache.phases(cfgs[0], batch, beam, max_len)
    parts = [cached_step(m, p, e[1], segments, phases[0], beam) for m, p, e in zip(models, params, encodings)]
    steps = [part[0] for part in parts]

    def step(caches, tokens, index):
        caches = caches if caches is not None else (None,) * len(steps)
        outputs = [one(cache, tokens, index) for one, cache in zip(steps, caches)]
        log_probs = [jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1) for logits, _ in outputs]
        return sum(log_probs) / len(log_probs), tuple(cache for _, cache in outputs)

    def reorder(caches, source_beams):
        return tuple(part[1](cache, source_beams) for part, cache in zip(parts, caches))

    def grow(caches, length):
        return tuple(part[2](cache, length) for part, cache in zip(parts, caches))

    members = zip(steps, params, encodings, cfgs)
    first = tuple(empty_first_cache(one, p, e[1], c, batch * beam) for one, p, e, c in members)
    loop = SearchLoop(step, batch, max_lengths, max_len, cfgs[0].eos_id, cfgs[0].pad_id, phases, grow, first, reorder)
    return _search(loop, beam, alpha, nbest, stop)


def check_ensemble(cfgs) -> None:
    """Models decode together only if their ids mean the same tokens: one vocabulary size and special ids."""
    first = cfgs[0]
    for number, cfg in enumerate(cfgs[1:], start=2):
        theirs = (cfg.vocab_size, cfg.pad_id, cfg.eos_id)
        if theirs != (first.vocab_size, first.pad_id, first.eos_id):
            raise ConfigError(
                f"ensemble: model {number} has vocab_size {cfg.vocab_size}, pad {cfg.pad_id}, eos {cfg.eos_id}; "
                f"model 1 has {first.vocab_size}, {first.pad_id}, {first.eos_id}: models must share a vocabulary"
            )


@functools.partial(jax.jit, static_argnames=("cfg", "temperature", "top_k", "top_p"))
def sample_ids(params, inputs, keys, *, cfg: ModelConfig, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0):
    """One sampled translation per row: token ids [batch, 1, L] and the model's log-probs [batch, 1] of them.
    ``keys`` [batch] PRNG keys, one per row (search.sampling_search)."""
    check_sampling(temperature, top_k, top_p)
    loop = _model_search(params, inputs, cfg, beam=1)
    tokens, score = sampling_search(loop, keys, temperature=temperature, top_k=top_k, top_p=top_p)
    return tokens[:, None], score[:, None]


def check_sampling(temperature: float, top_k: int, top_p: float) -> None:
    if temperature < 0:
        raise ConfigError(f"--temperature {temperature}: need >= 0 (0 = greedy)")
    if top_k < 0:
        raise ConfigError(f"--top-k {top_k}: need >= 0 (0 = no cut)")
    if not 0.0 < top_p <= 1.0:
        raise ConfigError(f"--top-p {top_p}: need 0 < top_p <= 1 (1 = no cut)")


def sample_keys(seed: int, lines, samples) -> jax.Array:
    """[len(lines)] PRNG keys: fold_in(fold_in(key(seed), line), sample) — a sample depends on its input line's
    number and its own, never on the batch it was decoded in."""
    base = jax.random.key(seed)
    return jax.vmap(lambda line, k: jax.random.fold_in(jax.random.fold_in(base, line), k))(
        jnp.asarray(lines, jnp.uint32), jnp.asarray(samples, jnp.uint32)
    )


@functools.partial(jax.jit, static_argnames=("cfg", "beam", "alpha", "nbest", "stop"))
def translate_uncached(
    params, inputs, *, cfg: ModelConfig, beam: int = 1, alpha: float = 0.6, nbest: int = 1, stop: str = "exact"
):
    """The same searches re-running the full decoder on every hypothesis's whole prefix at every step
    (no cache; the reference the cached paths are tested against, and the benchmark's baseline)."""
    check_beam(beam, nbest, stop)
    model = Transformer(cfg)
    segments, encoded, max_len, max_lengths = encode_inputs(model, params, inputs, cfg)
    batch = inputs.shape[0]
    rows = batch * beam
    encoded, inputs, segments = (jnp.repeat(x, beam, axis=0) for x in (encoded, inputs, segments))
    all_real = jnp.ones((rows, max_len), jnp.int32)

    def step(generated, last, index):
        """``generated`` [rows, max_len] plays the cache: the tokens so far, re-read in full every step."""
        generated = jnp.zeros((rows, max_len), jnp.int32) if generated is None else generated
        generated = jnp.where(index > 0, generated.at[:, index - 1].set(last), generated)
        logits = model.apply(
            {"params": params}, encoded, inputs, generated, segments, all_real, method=Transformer.decode
        )
        return logits[:, index], generated

    loop = SearchLoop(step, batch, max_lengths, max_len, cfg.eos_id, cfg.pad_id)
    return _search(loop, beam, alpha, nbest, stop)


_COMPILED: dict = {}  # (rows, length, cfg, beam, alpha, nbest, stop, phased, params placement) -> Future of the program
_COMPILING = threading.Lock()


@functools.cache
def _compile_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The compile threads, created on first use."""
    return concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="t2t-compile")


def _compile(params, rows: int, length: int, cfg: ModelConfig, search: dict, phased: bool):
    inputs = jax.ShapeDtypeStruct((rows, length), jnp.int32)
    return translate_ids.lower(params, inputs, cfg=cfg, **search, phased=phased).compile()


def compile_ahead(
    params, shapes, *, cfg: ModelConfig, beam: int, alpha: float, nbest: int, stop: str, once=frozenset()
) -> dict:
    """{(rows, length): Future of ``translate_ids`` compiled for [rows, length] inputs} for every shape a run
    will decode, compiled on two threads (XLA compiles a program on one core) while the first batches already
    decode: a cold start waits for the first shape's compilation, not for all of them in turn.

    Shapes in ``once`` decode a single batch in this run: the first time the process needs such a shape it is
    compiled as one loop (``phased=False``), half the compile that cache phases would not earn back in one
    batch. A process that asks for the shape again (a server, the next dev-BLEU evaluation) gets the phased
    program compiled meanwhile, and the one-loop program until that is done. Compiled decoders are kept for the
    process; the persistent compilation cache serves a later process."""
    futures = {}
    leaves, tree = jax.tree_util.tree_flatten(params)  # a program is compiled for its params' placement too
    placement = (tree, tuple(getattr(leaf, "sharding", None) for leaf in leaves))
    search = {"beam": beam, "alpha": alpha, "nbest": nbest, "stop": stop}

    def key(shape, phased: bool) -> tuple:
        return (*shape, cfg, beam, alpha, nbest, stop, phased, placement)

    def known(shape, phased: bool):
        """The program compiled or compiling for ``shape``, None if none or its compilation failed (retried)."""
        future = _COMPILED.get(key(shape, phased))
        return None if future is None or (future.done() and future.exception() is not None) else future

    def program(shape, phased: bool):
        """``known``, else a compilation started now (a failure surfaces at its ``result()``)."""
        future = known(shape, phased)
        if future is None:
            future = _compile_pool().submit(_compile, params, *shape, cfg, search, phased)
            _COMPILED[key(shape, phased)] = future
        return future

    with _COMPILING:
        for shape in dict.fromkeys(shapes):
            one_loop = known(shape, phased=False)
            if shape in once and one_loop is None and known(shape, phased=True) is None:  # first need: cheap
                futures[shape] = program(shape, phased=False)
                continue
            phased = program(shape, phased=True)  # needed again, or for several batches
            futures[shape] = one_loop if one_loop is not None and one_loop.done() and not phased.done() else phased
    return futures
