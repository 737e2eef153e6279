"""The machine's achievable matmul rate, measured now: the denominator of the MFU figures. Prints JSON.

    python bench/peak_matmul.py [--size 2048] [--repeats 10]

float32 × float32, bfloat16 inputs with float32 accumulation (what bf16 training runs), and int8 × int8 with
int32 accumulation (what int8-weight decoding would run: CTranslate2's int8 is ~1.3× its float32 on CPUs with
VNNI), square n×n matmuls, best of ``repeats`` timed calls after a warm-up. int8 through XLA:CPU is only worth
building on where its rate here clearly beats float32's.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import jax
import jax.numpy as jnp

from bench.machine import recorded  # noqa: E402


def matmul_rate(n: int, dtype, repeats: int) -> float:
    """Best GFLOP/s (GOP/s for int8) of an n×n×n matmul with ``dtype`` inputs, accumulated in float32 (int32 for
    int8)."""
    keys = jax.random.split(jax.random.PRNGKey(0))
    a, b = (jax.random.normal(k, (n, n), jnp.float32) for k in keys)
    result = jnp.int32 if jnp.dtype(dtype) == jnp.int8 else jnp.float32
    if result == jnp.int32:  # values spread over the int8 range
        a, b = (jnp.round(x * 40).clip(-127, 127) for x in (a, b))
    a, b = a.astype(dtype), b.astype(dtype)
    product = jax.jit(lambda x, y: jnp.matmul(x, y, preferred_element_type=result))
    product(a, b).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        product(a, b).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


def measure(size: int = 2048, repeats: int = 10) -> dict:
    return {
        "size": size,
        "float32_gflops_per_s": matmul_rate(size, jnp.float32, repeats),
        "bfloat16_gflops_per_s": matmul_rate(size, jnp.bfloat16, repeats),
        "int8_gops_per_s": matmul_rate(size, jnp.int8, repeats),
        "backend": jax.default_backend(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    print(json.dumps(recorded(measure(args.size, args.repeats)), indent=2))


if __name__ == "__main__":
    main()
