"""Matmuls with float32 accumulation for low-precision compute.

A plain bfloat16 dot on CPU is no faster than float32; bfloat16 inputs with
``preferred_element_type=float32`` are faster (docs/benchmarks.md; bench/peak_matmul.py).  Autodiff of such a dot
produces mixed (f32 x bf16) backward dots that XLA runs in float32, so the
gradient einsums are written out here (custom VJP) to keep bf16 inputs with
f32 accumulation in the backward pass too.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp


def einsum(equation: str, a, b, dtype, out_dtype=None):
    """``einsum`` of two operands in compute ``dtype``, accumulated in float32.

    The result has ``out_dtype`` (default ``dtype``).  In float32 this is a
    plain einsum.  Every index of each operand must appear in the other operand
    or in the output (true for all projections and attention products here).
    """
    dtype = jnp.dtype(dtype)
    out_dtype = jnp.dtype(out_dtype or dtype)
    if dtype == jnp.float32:
        return jnp.einsum(equation, a.astype(dtype), b.astype(dtype)).astype(out_dtype)
    return _mixed_einsum(equation, out_dtype, a.astype(dtype), b.astype(dtype))


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _mixed_einsum(equation, out_dtype, a, b):
    return jnp.einsum(equation, a, b, preferred_element_type=jnp.float32).astype(out_dtype)


def _mixed_einsum_fwd(equation, out_dtype, a, b):
    return _mixed_einsum(equation, out_dtype, a, b), (a, b)


def _mixed_einsum_bwd(equation, out_dtype, residuals, g):
    a, b = residuals
    inputs, out = equation.split("->")
    ia, ib = inputs.split(",")
    g = g.astype(a.dtype)
    ga = _f32_einsum(out, g, ib, b, ia)
    gb = _f32_einsum(ia, a, out, g, ib)
    return ga.astype(a.dtype), gb.astype(b.dtype)


def _f32_einsum(ix, x, iy, y, out):
    """bf16 x bf16 -> f32 einsum with the operand whose batch dims lead placed first.

    XLA:CPU runs mixed bf16->f32 dots only through its library kernels; some
    operand orders (e.g. 'bqhd,bhqk->bkhd') fall back to a generic dot that
    rejects this type combination, while the swapped order is canonical.
    """
    batch = set(ix) & set(iy) & set(out)
    if _leading(iy, batch) > _leading(ix, batch):
        ix, x, iy, y = iy, y, ix, x
    return jnp.einsum(f"{ix},{iy}->{out}", x, y, preferred_element_type=jnp.float32)


def _leading(indices, batch):
    count = 0
    for index in indices:
        if index not in batch:
            break
        count += 1
    return count


_mixed_einsum.defvjp(_mixed_einsum_fwd, _mixed_einsum_bwd)
