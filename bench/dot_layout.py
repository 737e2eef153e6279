"""A decode step's matmuls at few rows: activations row-major [rows, d] against feature-major [d, rows]. Prints JSON.

    python bench/dot_layout.py [--rows 1,2,4,8,32,128] [--rounds 15]

At a few decoder rows our step costs a fixed ~4 ms more than its rows' share (bench/decode_per_step.py), and the
step is mostly matmuls against weights read whole for a handful of rows. This times the matmuls of one decoder
position of the ``multi30k`` model's shapes (d_model 256, d_ff 1024, vocabulary 8000): the feed-forward block
(x W1, ReLU, W2) and the tied output projection x Eᵀ, 50 times inside one compiled ``fori_loop`` as a decode loop
runs them: with the activations as rows ([rows, 256]: the layout the model computes in); feature-major
([256, rows], weights on the left: Wᵀ xᵀ, E xᵀ); and row-major between products but each product feature-major,
its operand and result transposed behind ``optimization_barrier`` (so that XLA keeps the transposes rather
than folding them into the products). Feature-major products need the weights stored transposed ([d_ff, d], [d, d_ff]).
All give the same numbers (checked); they alternate over ``--rounds`` calls, and the JSON gives the medians in ms
per position.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from bench.machine import recorded  # noqa: E402

D_MODEL, D_FF, VOCAB, POSITIONS = 256, 1024, 8000, 50


@jax.jit
def row_major(x, w1, w2, embedding):
    """x [rows, d]: the model's layout."""

    def position(_, carry):
        x, total = carry
        x = jnp.tanh(jax.nn.relu(x @ w1) @ w2)
        return x, total + (x @ embedding.T).max()

    return jax.lax.fori_loop(0, POSITIONS, position, (x, 0.0))


@jax.jit
def feature_major(x_t, w1_t, w2_t, embedding):
    """x_t [d, rows]: the same products with the weights on the left."""

    def position(_, carry):
        x_t, total = carry
        x_t = jnp.tanh(w2_t @ jax.nn.relu(w1_t @ x_t))
        return x_t, total + (embedding @ x_t).max()

    return jax.lax.fori_loop(0, POSITIONS, position, (x_t, 0.0))


@jax.jit
def feature_major_products(x, w1_t, w2_t, embedding):
    """x [rows, d] between products, as a row-major step carries it; each product runs on xᵀ [d, rows]."""
    barrier = jax.lax.optimization_barrier

    def position(_, carry):
        x, total = carry
        y_t = jnp.tanh(w2_t @ jax.nn.relu(w1_t @ barrier(x.T)))
        logits_t = barrier(embedding @ barrier(y_t))  # [vocab, rows]
        return barrier(y_t).T, total + logits_t.max()

    return jax.lax.fori_loop(0, POSITIONS, position, (x, 0.0))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1,2,4,8,32,128")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((D_MODEL, D_FF), np.float32) * D_MODEL**-0.5
    w2 = rng.standard_normal((D_FF, D_MODEL), np.float32) * D_FF**-0.5
    embedding = jnp.asarray(rng.standard_normal((VOCAB, D_MODEL), np.float32) * D_MODEL**-0.5)
    w1, w2, w1_t, w2_t = map(jnp.asarray, (w1, w2, w1.T.copy(), w2.T.copy()))
    report = {"d_model": D_MODEL, "d_ff": D_FF, "vocab": VOCAB, "positions_per_call": POSITIONS, "results": []}
    for rows in map(int, args.rows.split(",")):
        x = jnp.asarray(rng.standard_normal((rows, D_MODEL), np.float32))
        layouts = {
            "row_major": lambda x=x: jax.block_until_ready(row_major(x, w1, w2, embedding)),
            "feature_major": lambda x=x: jax.block_until_ready(feature_major(x.T, w1_t, w2_t, embedding)),
            "feature_major_products": lambda x=x: jax.block_until_ready(
                feature_major_products(x, w1_t, w2_t, embedding)
            ),
        }
        (x_rows, total_rows), (x_features, total_features), (x_products, total_products) = (
            run()
            for run in layouts.values()  # compiled here
        )
        for x_other, total_other in ((x_features.T, total_features), (x_products, total_products)):
            np.testing.assert_allclose(np.asarray(x_rows), np.asarray(x_other), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(float(total_rows), float(total_other), rtol=1e-4)
        times = {name: [] for name in layouts}
        for _ in range(args.rounds):
            for name, run in layouts.items():
                start = time.perf_counter()
                run()
                times[name].append(1000 * (time.perf_counter() - start) / POSITIONS)
        result = {"rows": rows, **{f"{name}_ms": round(statistics.median(t), 4) for name, t in times.items()}}
        for name in ("feature_major", "feature_major_products"):
            result[f"{name}_speedup"] = round(result["row_major_ms"] / result[f"{name}_ms"], 3)
        report["results"].append(result)
        print(json.dumps(result), file=sys.stderr, flush=True)
    print(json.dumps(recorded(report), indent=2))


if __name__ == "__main__":
    main()
