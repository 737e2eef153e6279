"""The optimizer against Adam written out by hand (Kingma & Ba, Algorithm 1, with the paper's β2 0.98 and ε),
the §5.3 rate formula, global-norm clipping and decoupled weight decay; and train.nonfinite=skip."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from t2t_jax.config import default_config
from t2t_jax.model.config import ModelConfig
from t2t_jax.train.state import make_optimizer

D_MODEL = 16
WARMUP = 3


def paper_rate(step: int) -> float:
    """§5.3: lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), steps counted from 1."""
    return D_MODEL**-0.5 * min(step**-0.5, step * WARMUP**-1.5)


def hand_adam(params, grads_per_step, *, b1, b2, eps, clip_norm=0.0, weight_decay=0.0):
    """The parameters after each update, in float64 NumPy."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(x) for k, x in p.items()}
    out = []
    for t, grads in enumerate(grads_per_step, start=1):
        g = {k: np.asarray(x, np.float64) for k, x in grads.items()}
        if clip_norm:
            norm = np.sqrt(sum((x**2).sum() for x in g.values()))
            g = {k: x * min(1.0, clip_norm / norm) for k, x in g.items()}
        for k in p:
            m[k] = b1 * m[k] + (1 - b1) * g[k]
            v[k] = b2 * v[k] + (1 - b2) * g[k] ** 2
            direction = (m[k] / (1 - b1**t)) / (np.sqrt(v[k] / (1 - b2**t)) + eps)
            p[k] = p[k] - paper_rate(t) * (direction + weight_decay * p[k])
        out.append({k: x.copy() for k, x in p.items()})
    return out


def run_ours(params, grads_per_step, **changes):
    opt = default_config().optimizer
    opt.warmup_steps = WARMUP
    opt.update(changes)
    tx, _ = make_optimizer(opt, ModelConfig(d_model=D_MODEL, num_heads=2, vocab_size=8))
    state = tx.init(params)
    out = []
    for grads in grads_per_step:
        updates, state = tx.update(grads, state, params)
        params = jax.tree_util.tree_map(lambda p, u: p + u, params, updates)
        out.append(params)
    return out


@pytest.mark.parametrize(
    "changes",
    [{}, {"clip_norm": 0.5, "eps": 0.1}, {"weight_decay": 0.01}, {"b1": 0.5, "b2": 0.9, "eps": 1e-3}],
    ids=["paper", "clip", "weight_decay", "other_betas"],
)
def test_updates_equal_adam_written_out_by_hand(changes):
    """Five updates (through warmup into the decay) with changing gradients. The clip case uses a large ε: with
    ε ≈ 0 Adam's first step is invariant to the gradient's scale, and clipping would change nothing visible."""
    rng = np.random.default_rng(0)
    params = {"w": jnp.asarray(rng.normal(size=(3, 4)), jnp.float32), "b": jnp.asarray(rng.normal(size=4), jnp.float32)}
    grads = [{k: jnp.asarray(rng.normal(size=v.shape) * 3, jnp.float32) for k, v in params.items()} for _ in range(5)]
    opt = default_config().optimizer
    settings = {"b1": opt.b1, "b2": opt.b2, "eps": opt.eps, **changes}
    expected = hand_adam(params, grads, **settings)
    ours = run_ours(params, grads, **changes)
    for step, (mine, theirs) in enumerate(zip(ours, expected), start=1):
        for key in params:
            np.testing.assert_allclose(np.asarray(mine[key]), theirs[key], rtol=2e-5, atol=1e-6, err_msg=f"step {step}")


def test_clipping_changes_the_update_when_the_norm_is_above_the_threshold():
    """The clip case above is not vacuous: without clipping the same gradients give other parameters."""
    rng = np.random.default_rng(1)
    params = {"w": jnp.asarray(rng.normal(size=(3, 4)), jnp.float32)}
    grads = [{"w": jnp.asarray(rng.normal(size=(3, 4)) * 3, jnp.float32)}]
    clipped = run_ours(params, grads, clip_norm=0.5, eps=0.1)[0]["w"]
    unclipped = run_ours(params, grads, eps=0.1)[0]["w"]
    assert np.abs(np.asarray(clipped) - np.asarray(unclipped)).max() > 1e-3


POISON = 7  # a target id whose presence makes the loss (and so every gradient) NaN


def poisoned_loss(monkeypatch):
    from t2t_jax.train import step as step_module

    real = step_module.loss_sums

    def loss_sums(logits, targets, weights, label_smoothing):
        sums = real(logits, targets, weights, label_smoothing)
        return {**sums, "loss": sums["loss"] * jnp.where((targets == POISON).any(), jnp.nan, 1.0)}

    monkeypatch.setattr(step_module, "loss_sums", loss_sums)


@pytest.mark.parametrize("skip", [True, False])
def test_nonfinite_skip_keeps_params_and_moments_of_a_nan_step(monkeypatch, skip):
    from t2t_jax.model import Transformer
    from t2t_jax.train.state import create_state
    from t2t_jax.train.step import train_step

    poisoned_loss(monkeypatch)
    cfg = ModelConfig(vocab_size=16, d_model=D_MODEL, num_heads=2, d_ff=32, encoder_layers=1, decoder_layers=1)
    tx, _ = make_optimizer(default_config().optimizer, cfg)
    state = create_state(cfg, tx, seed=0)
    model = Transformer(cfg)
    step = jax.jit(lambda s, b: train_step(s, b, model=model, tx=tx, label_smoothing=0.1, skip_nonfinite=skip))
    clean = {"inputs": np.full((2, 5), 4, np.int32), "targets": np.full((2, 5), 5, np.int32)}
    poisoned = {**clean, "targets": np.full((2, 5), POISON, np.int32)}

    after_nan, sums = step(state, poisoned)
    assert not np.isfinite(float(sums["loss"])) and int(after_nan.step) == 1
    leaves = lambda tree: jax.tree_util.tree_leaves(tree)  # noqa: E731
    if skip:  # the update is dropped whole: params and Adam's moments as before
        for before, now in zip(
            leaves((state.params, state.opt_state)), leaves((after_nan.params, after_nan.opt_state))
        ):
            np.testing.assert_array_equal(np.asarray(before), np.asarray(now))
        after_clean, _ = step(after_nan, clean)  # and a healthy step after it still updates
        assert any(
            not np.array_equal(np.asarray(a), np.asarray(b))
            for a, b in zip(leaves(after_nan.params), leaves(after_clean.params))
        )
    else:  # without skip the NaN reaches the parameters
        assert any(np.isnan(np.asarray(leaf)).any() for leaf in leaves(after_nan.params))
