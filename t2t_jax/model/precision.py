"""Matmuls with float32 accumulation for low-precision compute.

A plain bfloat16 dot on CPU is no faster than float32; bfloat16 inputs with
``preferred_element_type=float32`` are faster (docs/benchmarks.md; bench/peak_matmul.py).  Autodiff of such a dot
produces mixed (f32 x bf16) backward dots that XLA runs in float32, so the
gradient einsums are written out here (custom VJP) to keep bf16 inputs with
f32 accumulation in the backward pass too.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")  # CPU instructions that make bf16 matmuls faster than float32


def cpu_flags() -> set[str]:
    """The flags /proc/cpuinfo lists (empty where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() == "flags":
                    return set(value.split())
    except OSError:
        pass
    return set()


def fast_bf16_matmuls() -> tuple[bool, str]:
    """(whether the default device multiplies bfloat16 faster than float32, why). TPUs and GPUs with bf16
    tensor cores (compute capability 8.0 and up) do; a CPU does with AMX or AVX512-BF16, and elsewhere its bf16
    matmuls are no faster than float32 ones (docs/benchmarks.md)."""
    backend = jax.default_backend()
    device = jax.devices()[0]
    if backend == "tpu":
        return True, f"a TPU ({device.device_kind})"
    if backend == "gpu":
        capability = getattr(device, "compute_capability", None)
        if capability is None or float(capability) >= 8.0:
            return True, f"a GPU with bf16 tensor cores ({device.device_kind})"
        return False, f"a GPU without bf16 tensor cores ({device.device_kind}, compute capability {capability})"
    found = sorted(set(BF16_CPU_FLAGS) & cpu_flags())
    if found:
        return True, f"a CPU with {' and '.join(found)}"
    return False, "a CPU without AMX or AVX512-BF16, where bf16 matmuls are no faster than float32"


def resolve_dtype(cfg):
    """(``cfg`` with a concrete compute dtype, a line saying which and why): ``model.dtype = "auto"`` becomes
    bfloat16 where the device has fast bf16 matmuls and float32 elsewhere; an explicit dtype stays."""
    if cfg.dtype != "auto":
        return cfg, f"compute dtype {cfg.dtype} (model.dtype)"
    fast, why = fast_bf16_matmuls()
    dtype = "bfloat16" if fast else "float32"
    return dataclasses.replace(cfg, dtype=dtype), f"compute dtype {dtype} (model.dtype = auto): {why}"


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
