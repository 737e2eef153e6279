"""The tiny models the export tests share: one config, a padded batch, and a briefly trained model."""

import functools

import numpy as np

from t2t_jax.config import default_config
from t2t_jax.model import ModelConfig, Transformer
from t2t_jax.train.state import create_state, make_optimizer
from t2t_jax.train.step import jit_train_step

CFG = ModelConfig(
    vocab_size=40, d_model=32, num_heads=4, d_ff=64, encoder_layers=2, decoder_layers=2, max_len=64, dropout=0.0
)


def batch(rows=4, seed=0):
    """(src, tgt) of random ids with some padding; neither side ends with EOS."""
    rng = np.random.default_rng(seed)
    src = rng.integers(3, 40, (rows, 7)).astype(np.int32)
    src[1, 5:] = 0
    tgt = rng.integers(3, 40, (rows, 6)).astype(np.int32)
    tgt[0, 4:] = 0
    return src, tgt


def shifted(tgt):
    """Decoder inputs: pad (the start token) then the target without its last token."""
    return np.concatenate([np.zeros((tgt.shape[0], 1), np.int32), tgt[:, :-1]], 1)


@functools.cache
def trained_params():
    """A briefly trained tiny model (reversal task) so outputs are peaked, not uniform."""
    optimizer = default_config().optimizer
    optimizer.warmup_steps = 50
    tx, _ = make_optimizer(optimizer, CFG)
    state = create_state(CFG, tx, 0)
    step = jit_train_step(Transformer(CFG), tx, 0.1)
    rng = np.random.default_rng(1)
    for _ in range(150):
        src = rng.integers(3, 40, (32, 8)).astype(np.int32)
        src[:, -1] = 1
        tgt = np.concatenate([src[:, -2::-1], src[:, -1:]], 1)
        state, _ = step(state, {"inputs": src, "targets": tgt})
    return state.params
