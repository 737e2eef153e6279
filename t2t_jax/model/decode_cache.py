"""The decode cache's one home: layout, slot axes, beam ancestry, growth, phase sizing, biases, gathers.

Self-attention caches hold ``length`` positions of all ``beam`` hypotheses of a sentence, position-major:
slot t * beam + k is position t of the hypothesis that occupied beam slot k at step t. So beam search never
moves cache contents; it only updates the *ancestry* [batch, beam, length]: for t <= index, the slot that
holds position t of every current hypothesis. Keys are kept [b, h, d, length * beam] and values
[b, h, length * beam, d], the layouts the step's two products read without a transpose (with [b, n, h, d]
caches XLA:CPU transposed every whole cache at every step). Cross-attention keys/values are projected on
the first step and kept per sentence in the same layouts. Beam 1 is greedy search: no ancestry.

Key dtype (``key_dtype``): XLA:CPU has no bf16 x bf16 -> f32 dot for the score product: it converted its
operands to f32, and with bf16 key buffers it converted (and copied) every whole key cache at every step,
most of a step's time (bench/profile_decode.py --workdir). On CPU, key buffers are therefore f32 holding the
compute dtype's values: the product reads the same numbers, each converted once, when written. (Values feed a
bf16-output product XLA:CPU runs natively; f32 value buffers measured no faster and stay in compute dtype.)

MultiHeadAttention asks this module to write and read; decode/decoder.py asks it to start, reorder and
grow the search's cache. Nothing else knows the layout.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from t2t_jax.model.masks import NEG_INF

SELF_KEY, SELF_VALUE = "cached_key", "cached_value"
CROSS_KEY, CROSS_VALUE = "cross_key", "cross_value"
SLOT_AXIS = {SELF_KEY: 3, SELF_VALUE: 2}  # the position-major slot axis of each self-attention buffer
PHASE_START = 16  # steps in the first decode phase (see phases)
PHASE_MIN_BYTES = 4 << 20  # one layer's self-attention caches below this: a single loop
PHASE_MERGE = 1.5  # a last phase shorter than this times the bound before it joins that phase


class DecodeStep(NamedTuple):
    """Where one cached decoding step is: rows are grouped [batch, beam]."""

    index: jax.Array  # the position being predicted (scalar int32)
    length: int  # positions the self-attention caches hold per hypothesis
    beam: int = 1  # hypotheses per sentence (1 = greedy)
    ancestry: jax.Array | None = None  # [batch, beam, length] int32; None for beam 1


class SearchCache(NamedTuple):
    """What the search carries between steps (a pytree)."""

    model: dict  # the model's "cache" collection: per layer SELF_KEY/SELF_VALUE and CROSS_KEY/CROSS_VALUE
    ancestry: jax.Array | None  # [batch, beam, length] int32; None for beam 1


# --- the search's side: start, step, reorder, grow -------------------------------------------------------


def new_ancestry(batch: int, beam: int, length: int) -> jax.Array | None:
    return jnp.zeros((batch, beam, length), jnp.int32) if beam > 1 else None


def step_of(cache: SearchCache | None, index, beam: int, batch: int, first_length: int) -> DecodeStep:
    """The DecodeStep of the step at ``index`` (cache None: the first step, which creates the caches for
    ``first_length`` positions): position ``index`` of every hypothesis is written into its own slot."""
    if cache is None:
        ancestry, length = new_ancestry(batch, beam, first_length), first_length
    else:
        ancestry, length = cache.ancestry, positions(cache.model, beam)
    if ancestry is not None:
        ancestry = ancestry.at[:, :, index].set(jnp.arange(beam, dtype=jnp.int32))
    return DecodeStep(index, length, beam, ancestry)


def start(shapes: SearchCache, cross: dict) -> SearchCache:
    """The cache as step 0 finds it when step 0 runs inside the search loop: ``shapes`` is the structure
    step 0 would create (jax.eval_shape of it); self-attention buffers and ancestry are zero (step 0 writes
    position 0 itself), cross-attention entries come from ``cross`` {module path: {CROSS_KEY, CROSS_VALUE}}."""

    def fill(path, leaf):
        names = tuple(getattr(p, "key", None) for p in path)
        if names[-1] in (CROSS_KEY, CROSS_VALUE):
            return cross[names[:-1]][names[-1]]
        return jnp.zeros(leaf.shape, leaf.dtype)

    model = jax.tree_util.tree_map_with_path(fill, shapes.model)
    ancestry = None if shapes.ancestry is None else jnp.zeros(shapes.ancestry.shape, shapes.ancestry.dtype)
    return SearchCache(model, ancestry)


def cross_modules(shapes: SearchCache) -> list[tuple]:
    """The module paths (tuples of names) whose cache holds cross-attention keys/values."""
    paths = []
    for path, _ in jax.tree_util.tree_leaves_with_path(shapes.model):
        names = tuple(getattr(p, "key", None) for p in path)
        if names[-1] == CROSS_KEY:
            paths.append(names[:-1])
    return paths


def reorder(cache: SearchCache, source_beams) -> SearchCache:
    """Hypothesis k now continues ``source_beams`` [batch, beam][:, k]: it inherits that one's ancestry."""
    if cache.ancestry is None:  # beam 1: one hypothesis per sentence, nothing to follow
        return cache
    return SearchCache(cache.model, jnp.take_along_axis(cache.ancestry, source_beams[:, :, None], 1))


def grow(cache: SearchCache, length: int, beam: int) -> SearchCache:
    """Self-attention buffers and ancestry zero-padded to ``length`` positions per hypothesis (slots are
    position-major, so the written ones keep their places); cross-attention entries as they are."""

    def pad(path, leaf):
        axis = SLOT_AXIS.get(getattr(path[-1], "key", None))
        if axis is None:
            return leaf
        widths = [(0, 0)] * leaf.ndim
        widths[axis] = (0, length * beam - leaf.shape[axis])
        return jnp.pad(leaf, widths)

    ancestry = cache.ancestry
    if ancestry is not None:
        ancestry = jnp.pad(ancestry, ((0, 0), (0, 0), (0, length - ancestry.shape[-1])))
    return SearchCache(jax.tree_util.tree_map_with_path(pad, cache.model), ancestry)


def positions(model_cache, beam: int) -> int:
    """Positions the self-attention buffers of a "cache" collection hold per hypothesis (all layers alike)."""
    for path, leaf in jax.tree_util.tree_leaves_with_path(model_cache):
        name = getattr(path[-1], "key", None)
        if name in SLOT_AXIS:
            return leaf.shape[SLOT_AXIS[name]] // beam
    raise ValueError("decode cache has no self-attention buffers")


def phases(cfg, batch: int, beam: int, max_len: int) -> tuple[int, ...]:
    """Step bounds at which the self-attention caches grow (doubling from PHASE_START to ``max_len``), or
    (max_len,), one full-size loop, when a layer's caches are under PHASE_MIN_BYTES (reading them whole is cheap).

    At batch 64 × beam 4 a tiny model's caches are 18 MB a layer, read from memory at every step; with full
    buffers the early steps read mostly empty slots. Sized to the phase, a step reads < 2× what is written.
    Each phase compiles its own loop body, hence doubling (few phases), the size threshold, and a short last
    phase merged into the one before (max_len 66: 16, 32, 66)."""
    per_position = cfg.key_value_heads * (cfg.head_dim_k + cfg.head_dim_v) * jnp.dtype(cfg.dtype).itemsize
    if batch * beam * max_len * per_position < PHASE_MIN_BYTES:
        return (max_len,)
    bounds = [PHASE_START]
    while bounds[-1] * 2 < max_len:
        bounds.append(bounds[-1] * 2)
    bounds = [b for b in bounds if b < max_len]
    if len(bounds) > 1 and max_len < PHASE_MERGE * bounds[-1]:  # (.., 64, 66): a loop of 2 steps costs a compile
        bounds.pop()
    return tuple(bounds) + (max_len,)


# --- the attention layer's side: write, read, biases, per-hypothesis views --------------------------------


def key_dtype(dtype):
    """The dtype of cached keys for compute ``dtype``: f32 on CPU (see the module docstring), else ``dtype``."""
    return jnp.float32 if jax.default_backend() == "cpu" else jnp.dtype(dtype)


def write_self(module, key, value, step: DecodeStep):
    """Write this step's keys/values [batch * beam, 1, h, d] of all hypotheses at position ``step.index`` of
    ``module``'s fixed-size buffers (created on the first step), in place; returns (keys, values) in the
    cache layouts [b, h, d, length * beam] / [b, h, length * beam, d]."""
    rows, _, heads, dk = key.shape
    batch, beam, size = rows // step.beam, step.beam, step.length * step.beam
    cached_key = module.variable("cache", SELF_KEY, jnp.zeros, (batch, heads, dk, size), key_dtype(key.dtype))
    cached_value = module.variable("cache", SELF_VALUE, jnp.zeros, (batch, heads, size, value.shape[-1]), value.dtype)
    key = key.reshape(batch, beam, heads, dk).transpose(0, 2, 3, 1).astype(cached_key.value.dtype)  # [b, h, d, beam]
    value = value.reshape(batch, beam, heads, -1).transpose(0, 2, 1, 3)  # [b, h, beam, d]
    for cached, update, name in ((cached_key, key, SELF_KEY), (cached_value, value, SELF_VALUE)):
        start = [0] * update.ndim
        start[SLOT_AXIS[name]] = step.index * beam
        cached.value = jax.lax.dynamic_update_slice(cached.value, update, start)
    return cached_key.value, cached_value.value


def read_cross(module, key_proj, value_proj, encoded):
    """Encoder keys/values in the cache layouts, projected on the first decode step only."""
    if module.has_variable("cache", CROSS_KEY):
        return module.get_variable("cache", CROSS_KEY), module.get_variable("cache", CROSS_VALUE)
    key_t = key_proj(encoded).transpose(0, 2, 3, 1)  # [b, s, h, d] -> [b, h, d, s]
    value_t = value_proj(encoded).transpose(0, 2, 1, 3)  # [b, s, h, d] -> [b, h, s, d]
    key_t = key_t.astype(key_dtype(key_t.dtype))
    module.put_variable("cache", CROSS_KEY, key_t)
    module.put_variable("cache", CROSS_VALUE, value_t)
    return key_t, value_t


def self_bias(step: DecodeStep, window: int = 0):
    """[batch or 1, 1, beam, length * beam] float32 bias of one step over the grouped self-attention cache:
    each hypothesis sees its own ancestors' slots at positions <= index (within ``window`` if set)."""
    position = jnp.arange(step.length)
    visible = position <= step.index
    if window:
        visible = visible & (position >= step.index - window)
    if step.beam == 1:
        return jnp.where(visible, 0.0, NEG_INF).astype(jnp.float32)[None, None, None, :]
    allowed = visible[None, None, :, None] & (step.ancestry[..., None] == jnp.arange(step.beam))
    batch = step.ancestry.shape[0]
    return jnp.where(allowed, 0.0, NEG_INF).astype(jnp.float32).reshape(batch, 1, step.beam, -1)


def cross_bias(input_segments):
    """[batch, 1, 1, source_len]: decoding queries are never padding, so only source padding is hidden."""
    return jnp.where(input_segments != 0, 0.0, NEG_INF).astype(jnp.float32)[:, None, None, :]


def per_hypothesis_self(key_t, value_t, step: DecodeStep, window: int = 0):
    """Each row's own history in the registry layout, keys/values [batch * beam, length, h, d], gathered from
    the grouped cache through the ancestry, with its causal bias [1, 1, 1, length] (for variants that read
    keys per row; the dot-product family reads the grouped cache directly)."""
    key, value = key_t.transpose(0, 3, 1, 2), value_t.transpose(0, 2, 1, 3)  # [b, length * beam, h, d]
    batch, beam, length = key.shape[0], step.beam, step.length
    bias = self_bias(DecodeStep(step.index, length), window)
    if beam == 1:
        return key, value, bias
    slot = (jnp.arange(length)[None, None, :] * beam + step.ancestry).reshape(batch * beam, length)

    def gather(x):  # [b, length * beam, h, d] -> [b * beam, length, h, d]
        x = jnp.repeat(x, beam, axis=0)
        return jnp.take_along_axis(x, slot[:, :, None, None], axis=1)

    return gather(key), gather(value), bias


def per_hypothesis_cross(key_t, value_t, bias, beam: int):
    """Every hypothesis's view of its sentence's encoder keys/values [batch * beam, s, h, d] and bias."""
    key, value = key_t.transpose(0, 3, 1, 2), value_t.transpose(0, 2, 1, 3)
    return tuple(jnp.repeat(x, beam, axis=0) for x in (key, value, bias))
