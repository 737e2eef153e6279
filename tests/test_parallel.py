"""Data parallelism: pmap == mesh == one device, global token normalisation, accumulation (several processes:
tests/test_multihost_faults.py)."""

import jax
import numpy as np
import pytest

from t2t_jax.config import load_config, model_config
from t2t_jax.data.inputs import make_data
from t2t_jax.model import Transformer
from t2t_jax.train.parallel import host_tree, make_launcher
from t2t_jax.train.state import create_state, make_optimizer
from t2t_jax.train.step import eval_step, jit_train_step


def test_eight_cpu_devices_are_visible():
    assert jax.default_backend() == "cpu"  # tests/conftest.py pins the CPU (JAX_PLATFORMS) ...
    assert jax.device_count() == 8  # ... and sets XLA_FLAGS before jax is imported


def setup(extra=()):
    config = load_config(
        "smoke",
        [
            "--config.model.dropout=0.1",
            "--config.model.attention_dropout=0.1",
            "--config.data.batch_tokens=512",
            *extra,
        ],
    )
    cfg = model_config(config)
    tx, _ = make_optimizer(config.optimizer, cfg, config.train.steps)
    batches = make_data(config).train
    return config, cfg, tx, Transformer(cfg), [next(batches) for _ in range(3)]


def max_diff(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)))


def run_single(cfg, tx, model, batches, accum_steps=1):
    state = create_state(cfg, tx, 0)
    step = jit_train_step(model, tx, 0.1, accum_steps=accum_steps)
    for batch in batches:
        state, sums = step(state, batch)
    return host_tree(state.params), float(sums["loss"])


def run_launcher(kind, cfg, tx, model, batches, accum_steps=1):
    launcher = make_launcher(kind, model, tx, 0.1, accum_steps=accum_steps)
    state = launcher.put_state(create_state(cfg, tx, 0))
    for batch in batches:
        state, sums = launcher.train_step(state, launcher.put_batch(batch))
    return host_tree(launcher.get_state(state).params), float(sums["loss"]), launcher


def test_pmap_mesh_and_single_device_agree_with_dropout():
    _, cfg, tx, model, batches = setup()
    single, single_loss = run_single(cfg, tx, model, batches)
    for kind in ("mesh", "pmap"):
        params, loss, launcher = run_launcher(kind, cfg, tx, model, batches)
        assert launcher.device_count == 8
        assert max_diff(params, single) < 1e-5, kind
        assert loss == pytest.approx(single_loss, rel=1e-5)


def test_uneven_padding_is_normalised_by_global_tokens():
    _, cfg, tx, model, batches = setup()
    batch = {k: v.copy() for k, v in batches[0].items()}
    batch["targets"][:16, 3:] = 0  # devices 0-3 get far fewer target tokens than devices 4-7
    params = create_state(cfg, tx, 0).params
    launcher = make_launcher("mesh", model, tx, 0.1)
    sums = launcher.eval_step(launcher.put_state(params), launcher.put_batch(batch))
    single = eval_step(params, batch, model=model, label_smoothing=0.1)
    assert float(sums["tokens"]) == float(single["tokens"]) == float((batch["targets"] != 0).sum())
    assert float(sums["loss"]) / float(sums["tokens"]) == pytest.approx(
        float(single["loss"]) / float(single["tokens"]), rel=1e-5
    )
    # And the update: one mesh step on the unevenly padded batch == one single-device step.
    single, _ = run_single(cfg, tx, model, [batch])
    mesh, _, _ = run_launcher("mesh", cfg, tx, model, [batch])
    assert max_diff(single, mesh) < 1e-6


def test_gradient_accumulation_equals_one_big_step():
    _, cfg, tx, model, batches = setup()
    whole, _ = run_single(cfg, tx, model, batches)
    accumulated, _ = run_single(cfg, tx, model, batches, accum_steps=4)
    assert max_diff(whole, accumulated) < 1e-5
    mesh_accumulated, _, _ = run_launcher("mesh", cfg, tx, model, batches, accum_steps=2)
    assert max_diff(whole, mesh_accumulated) < 1e-5


def test_no_recompilation_after_first_step():
    _, cfg, tx, model, batches = setup()
    launcher = make_launcher("mesh", model, tx, 0.1)
    state = launcher.put_state(create_state(cfg, tx, 0))
    for batch in batches:
        state, _ = launcher.train_step(state, launcher.put_batch(batch))
        launcher.eval_step(state.params, launcher.put_batch(batch))
    assert launcher.train_step._cache_size() == 1
    assert launcher.eval_step._cache_size() == 1
