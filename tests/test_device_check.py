"""What would hurt on an accelerator, checked on CPU: compilations per shape, host round trips inside the
compiled step and search, bf16 where bf16 is meant, fused attention reaching cuDNN; and bench/device_check.py's
smoke run, which exercises the prepared GPU check's code paths end to end."""

import collections
import dataclasses
import functools
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bench.device_check import CompileCounter, nominal_tflops
from t2t_jax.config import default_config
from t2t_jax.decode.decoder import translate_ids
from t2t_jax.model import Transformer, attention_functions
from t2t_jax.model.config import ModelConfig
from t2t_jax.train.state import create_state, init_params, make_optimizer
from t2t_jax.train.step import jit_train_step, train_step

HOST_WORDS = ("callback", "debug", "print", "infeed", "outfeed")  # primitives that stop for the host
TINY = ModelConfig(vocab_size=61, d_model=32, num_heads=2, d_ff=64, encoder_layers=1, decoder_layers=1, max_len=32)


def equations(jaxpr):
    """Every equation of a jaxpr, nested ones (jit, scan, while, custom_vjp bodies) included."""
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for sub in param if isinstance(param, (list, tuple)) else [param]:
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from equations(inner)


def train_step_jaxpr(cfg):
    tx, _ = make_optimizer(default_config().optimizer, cfg)
    state = create_state(cfg, tx, seed=0)
    batch = {k: np.full((4, 12), 5, np.int32) for k in ("inputs", "targets")}
    step = functools.partial(train_step, model=Transformer(cfg), tx=tx, label_smoothing=0.1)
    return jax.make_jaxpr(step)(state, batch).jaxpr


def decode_jaxpr(cfg):
    params = init_params(cfg, seed=0)
    return jax.make_jaxpr(lambda p, s: translate_ids(p, s, cfg=cfg, beam=4))(params, np.ones((2, 6), np.int32)).jaxpr


def test_compile_counter_counts_each_new_shape_once():
    counter = CompileCounter()
    double = jax.jit(lambda x: x * 2.0)
    with counter.counting():
        for _ in range(3):
            double(np.ones(7, np.float32))
    assert counter.count == 1
    with counter.counting():
        double(np.ones(7, np.float32))
        double(np.ones(9, np.float32))
    assert counter.count == 1  # only the new shape


def test_train_step_compiles_once_over_twenty_steps_of_new_data():
    cfg = dataclasses.replace(TINY, vocab_size=59)  # a config no other test has compiled
    tx, _ = make_optimizer(default_config().optimizer, cfg)
    state = create_state(cfg, tx, seed=0)
    step = jit_train_step(Transformer(cfg), tx, label_smoothing=0.1)
    rng = np.random.default_rng(0)
    counter = CompileCounter()
    with counter.counting():
        for _ in range(20):
            batch = {k: rng.integers(3, cfg.vocab_size, (4, 12)).astype(np.int32) for k in ("inputs", "targets")}
            state, sums = step(state, batch)
        jax.block_until_ready(sums)
    assert counter.count == 1


@pytest.mark.parametrize("program", ["train_step", "translate_ids"])
def test_no_host_callback_inside_the_compiled_step_or_search(program):
    jaxpr = train_step_jaxpr(TINY) if program == "train_step" else decode_jaxpr(TINY)
    callbacks = [e.primitive.name for e in equations(jaxpr) if any(w in e.primitive.name for w in HOST_WORDS)]
    assert callbacks == [], f"{program} leaves the device every step: {callbacks}"


@pytest.mark.parametrize("program", ["train_step", "translate_ids"])
def test_bf16_compute_runs_every_matmul_on_bf16_inputs_on_an_accelerator(program, monkeypatch):
    """bf16 models: every dot_general of the step (forward and backward) and of the cached search takes bf16
    operands. The decode caches keep f32 keys on CPU only (model/decode_cache.py), so the backend is an
    accelerator here; the config is one no other test traced (jit caches traces by config)."""
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    cfg = dataclasses.replace(TINY, vocab_size=67, dtype="bfloat16")
    jaxpr = train_step_jaxpr(cfg) if program == "train_step" else decode_jaxpr(cfg)
    dots = collections.Counter(
        tuple(str(v.aval.dtype) for v in e.invars) for e in equations(jaxpr) if e.primitive.name == "dot_general"
    )
    assert dots and set(dots) == {("bfloat16", "bfloat16")}, dots


def spy_on_dot_product_attention(monkeypatch):
    calls = []
    real = jax.nn.dot_product_attention

    def spy(query, key, value, *, bias=None, implementation=None):
        calls.append({"implementation": implementation, "bias": None if bias is None else bias.shape})
        return real(query, key, value, bias=bias, implementation="xla")  # cuDNN is not on a CPU machine

    monkeypatch.setattr(jax.nn, "dot_product_attention", spy)
    return calls


@pytest.mark.parametrize(
    "backend, dtype, expected", [("gpu", "bfloat16", "cudnn"), ("gpu", "float32", "xla"), ("cpu", "bfloat16", "xla")]
)
def test_fused_attention_asks_for_cudnn_on_a_gpu_in_half_precision_without_a_per_head_bias(
    monkeypatch, backend, dtype, expected
):
    calls = spy_on_dot_product_attention(monkeypatch)
    monkeypatch.setattr(jax, "default_backend", lambda: backend)
    rng = np.random.default_rng(0)
    q, k, v = (jnp.asarray(rng.normal(size=(2, 5, 4, 8)), jnp.float32) for _ in range(3))
    padding = jnp.where(jnp.arange(5) < 3, 0.0, -1e9)[None, None, None, :].repeat(2, 0)  # [b, 1, 1, k]
    out = attention_functions.fused(q, k, v, padding, dtype=dtype)
    assert calls[0]["implementation"] == expected
    assert calls[0]["bias"] == (2, 1, 5, 5)  # broadcast over queries (cuDNN needs them), not over the 4 heads
    reference = attention_functions.dot_product(q, k, v, padding, dtype=dtype)
    np.testing.assert_allclose(np.asarray(out, np.float32), np.asarray(reference, np.float32), atol=2e-2)


def test_nominal_peak_is_looked_up_by_device_kind():
    assert nominal_tflops("NVIDIA H100 80GB HBM3") == 989.0
    assert nominal_tflops("NVIDIA H100 PCIe") == 756.0
    assert nominal_tflops("NVIDIA A100-SXM4-80GB") == 312.0
    assert nominal_tflops("cpu") is None


@pytest.mark.slow
def test_device_check_smoke_runs_every_section_on_cpu(tmp_path):
    out = tmp_path / "check.json"
    result = subprocess.run(
        [sys.executable, "bench/device_check.py", "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["machine"]["backend"] == "cpu" and report["machine"]["cpu"]["cores"] >= 1
    matmul = report["matmul"]
    assert matmul["bfloat16_tflops"] > 0 and matmul["float32_tflops"] > 0
    assert set(report["train"]) == {
        "smoke_bfloat16_dot_product",
        "smoke_float32_dot_product",
        "smoke_bfloat16_fused",
    }
    for name, case in report["train"].items():
        assert case["compilations_in_steps"] == 1, name  # the first step's, and no retrace after it
        dtype = name.split("_")[1]
        assert case["mfu_measured"] == pytest.approx(case["model_tflops_per_s"] / matmul[f"{dtype}_tflops"])
        assert case["target_tokens_per_s"] == pytest.approx(case["target_tokens_per_step"] / case["seconds_per_step"])
        assert np.isfinite(case["loss"]) and case["compiled_temp_bytes"] > 0
    losses = [c["loss"] for c in report["train"].values()]
    assert max(losses) - min(losses) < 0.02  # fused and einsum attention, f32 and bf16: the same model and data
    assert {e["batch"] for e in report["decode"].values()} == {4, 1}
    hf = [e for e in report["decode"].values() if "hf_generate_seconds" in e]
    assert len(hf) == 2 and all(e["speedup_over_hf_generate"] > 0 for e in hf)
    minutes = report["minutes_to_bleu"]
    assert minutes["steps"] >= 1 and minutes["stopped"] in ("budget", "steps")
    assert 0.0 <= minutes["test_sacrebleu"] <= 100.0 and minutes["test_report"]["sentences"] == 16
