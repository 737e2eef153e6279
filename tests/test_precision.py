"""model.dtype = "auto": bfloat16 where the device multiplies bf16 faster than float32 (TPU, GPUs with bf16 tensor
cores, CPUs with AMX or AVX512-BF16), float32 elsewhere; an explicit dtype stays. The detection is mocked both
ways; training logs the choice and decoding makes it on its own machine."""

import dataclasses
import types

import pytest

from t2t_jax.model import precision
from t2t_jax.model.config import ModelConfig

CFG = ModelConfig(vocab_size=16, d_model=8, num_heads=2, d_ff=16, encoder_layers=1, decoder_layers=1, dtype="auto")


def on(monkeypatch, backend, flags=(), capability=None, kind="device"):
    device = types.SimpleNamespace(device_kind=kind, compute_capability=capability)
    monkeypatch.setattr(precision.jax, "default_backend", lambda: backend)
    monkeypatch.setattr(precision.jax, "devices", lambda *a: [device])
    monkeypatch.setattr(precision, "cpu_flags", lambda: set(flags))


@pytest.mark.parametrize(
    "backend, flags, capability, expected",
    [
        ("cpu", ("avx2", "avx512f", "avx512_vnni"), None, "float32"),  # AVX-512 without its bf16 instructions
        ("cpu", ("avx2", "amx_bf16", "amx_tile"), None, "bfloat16"),
        ("cpu", ("avx512f", "avx512_bf16"), None, "bfloat16"),
        ("gpu", (), "9.0", "bfloat16"),  # H100
        ("gpu", (), "8.0", "bfloat16"),  # A100
        ("gpu", (), "7.5", "float32"),  # T4: no bf16 tensor cores
        ("tpu", (), None, "bfloat16"),
    ],
)
def test_auto_follows_the_hardware(monkeypatch, backend, flags, capability, expected):
    on(monkeypatch, backend, flags, capability)
    cfg, note = precision.resolve_dtype(CFG)
    assert cfg.dtype == expected and note.startswith(f"compute dtype {expected} (model.dtype = auto): ")
    assert dataclasses.replace(cfg, dtype="auto") == CFG  # nothing else changes


@pytest.mark.parametrize("explicit", ["float32", "bfloat16"])
def test_an_explicit_dtype_wins(monkeypatch, explicit):
    on(monkeypatch, "cpu", ("amx_bf16",) if explicit == "float32" else ())
    cfg, note = precision.resolve_dtype(dataclasses.replace(CFG, dtype=explicit))
    assert cfg.dtype == explicit and note == f"compute dtype {explicit} (model.dtype)"


def test_cpu_flags_reads_this_machine():
    assert "fpu" in precision.cpu_flags() or not precision.cpu_flags()  # Linux lists fpu; elsewhere: empty


def test_training_logs_the_choice_and_decoding_makes_its_own(monkeypatch, tmp_path):
    import t2t_jax
    from t2t_jax.decode.translate import load_for_inference

    config = t2t_jax.config.get("smoke", "--config.model.dtype=auto", "--config.train.steps=2")
    config.train.eval_every = 2
    lines = []
    monkeypatch.setattr(precision, "cpu_flags", lambda: {"amx_bf16"})  # this CPU, as if it had AMX
    t2t_jax.train_and_evaluate(config, tmp_path / "w", final=False, log=lambda m, **k: lines.append(str(m)))
    assert "compute dtype bfloat16 (model.dtype = auto): a CPU with amx_bf16" in lines
    from test_end_to_end import train_reversal_workdir

    workdir = train_reversal_workdir(tmp_path / "text", steps=2, overrides=["--config.model.dtype=auto"])
    assert load_for_inference(workdir).cfg.dtype == "bfloat16"  # still "as if with AMX"
    monkeypatch.setattr(precision, "cpu_flags", lambda: {"avx2"})  # the workdir read on a CPU without them
    assert load_for_inference(workdir).cfg.dtype == "float32"


def test_a_transformer_built_from_an_auto_config_runs_in_this_machine_s_dtype(monkeypatch):
    import jax
    import jax.numpy as jnp

    from t2t_jax.model import Transformer

    monkeypatch.setattr(precision, "cpu_flags", lambda: {"avx2"})
    model = Transformer(CFG)
    assert model.config.dtype == "float32"
    tokens = jnp.ones((1, 4), jnp.int32)
    assert jax.eval_shape(lambda: model.init(jax.random.PRNGKey(0), tokens, tokens))  # no "data type 'auto'"
