"""The whole model against tests/numpy_reference.py (the paper in NumPy, one sentence at a time, no masks), on
random weights, post-LN and pre-LN, in padded and in packed batches. Needs only the base install."""

import jax
import numpy as np
import pytest
from numpy_reference import logits as reference_logits

from t2t_jax.model import ModelConfig, Transformer
from t2t_jax.train.state import init_params

PAIRS = [  # (source, target) ids; 1 is EOS, 0 pad
    ([5, 9, 12, 7, 1], [8, 3, 30, 1]),
    ([22, 4, 1], [6, 6, 17, 25, 39, 1]),
    ([3, 14, 15, 9, 26, 5, 1], [27, 1]),
]


def random_weights(cfg, seed=0):
    """The model's init plus noise on every leaf, so LayerNorm scales/biases and FFN biases are not 1 and 0."""
    params = init_params(cfg, seed=seed)
    leaves, tree = jax.tree_util.tree_flatten(params)
    rng = np.random.default_rng(seed)
    return jax.tree_util.tree_unflatten(
        tree, [np.asarray(x) + rng.normal(0, 0.1, x.shape).astype(np.float32) for x in leaves]
    )


def config(ln):
    return ModelConfig(
        vocab_size=40, d_model=32, num_heads=4, d_ff=64, encoder_layers=2, decoder_layers=2, ln=ln, max_len=64
    )


def padded(sequences):
    out = np.zeros((len(sequences), max(map(len, sequences))), np.int32)
    for row, seq in enumerate(sequences):
        out[row, : len(seq)] = seq
    return out


def packed(sequences, length):
    """One packed row: the sequences side by side, segment ids 1..n, positions restarting at 0 per segment."""
    tokens, segments, positions = (np.zeros((1, length), np.int32) for _ in range(3))
    start = 0
    for number, seq in enumerate(sequences, start=1):
        tokens[0, start : start + len(seq)] = seq
        segments[0, start : start + len(seq)] = number
        positions[0, start : start + len(seq)] = np.arange(len(seq))
        start += len(seq)
    return tokens, segments, positions


@pytest.mark.parametrize("ln", ["post", "pre"])
def test_padded_batch_equals_the_numpy_paper_model_sentence_by_sentence(ln):
    cfg = config(ln)
    params = random_weights(cfg)
    sources, targets = padded([s for s, _ in PAIRS]), padded([t for _, t in PAIRS])
    ours = np.asarray(Transformer(cfg).apply({"params": params}, sources, targets))  # [3, 6, 40]
    for row, (source, target) in enumerate(PAIRS):
        expected = reference_logits(params, source, target, ln=ln)
        np.testing.assert_allclose(ours[row, : len(target)], expected, rtol=1e-4, atol=1e-4, err_msg=f"pair {row}")


@pytest.mark.parametrize("ln", ["post", "pre"])
def test_packed_row_equals_the_numpy_paper_model_sentence_by_sentence(ln):
    cfg = config(ln)
    params = random_weights(cfg, seed=1)
    inputs, input_segments, input_positions = packed([s for s, _ in PAIRS], 18)
    targets, target_segments, target_positions = packed([t for _, t in PAIRS], 14)
    ours = np.asarray(
        Transformer(cfg).apply(
            {"params": params},
            inputs,
            targets,
            inputs_segmentation=input_segments,
            targets_segmentation=target_segments,
            inputs_position=input_positions,
            targets_position=target_positions,
        )
    )[0]
    start = 0
    for number, (source, target) in enumerate(PAIRS):
        expected = reference_logits(params, source, target, ln=ln)
        got = ours[start : start + len(target)]
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4, err_msg=f"segment {number + 1}")
        start += len(target)
