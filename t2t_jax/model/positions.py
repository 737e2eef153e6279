"""Position signals: the paper's interleaved sinusoids, T2T's concatenated layout, learned tables."""

from __future__ import annotations

import numpy as np


def sinusoidal_table(length: int, d_model: int) -> np.ndarray:
    """The paper's formula (§3.5): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...)."""
    positions = np.arange(length, dtype=np.float64)[:, None]
    two_i = np.arange(0, d_model, 2, dtype=np.float64)[None, :]
    angles = positions / np.power(10000.0, two_i / d_model)
    table = np.zeros((length, d_model), dtype=np.float64)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return table.astype(np.float32)


def concat_table(length: int, d_model: int) -> np.ndarray:
    """T2T / Flax / fairseq layout: [sin | cos] halves, timescales 10000^(i/(d/2-1))."""
    half = d_model // 2
    positions = np.arange(length, dtype=np.float64)[:, None]
    increment = np.log(10000.0) / max(half - 1, 1)
    inv_timescales = np.exp(-increment * np.arange(half, dtype=np.float64))[None, :]
    scaled = positions * inv_timescales
    table = np.concatenate([np.sin(scaled), np.cos(scaled)], axis=1)
    if d_model % 2:
        table = np.pad(table, ((0, 0), (0, 1)))
    return table.astype(np.float32)


FIXED_TABLES = {"sinusoidal": sinusoidal_table, "concat": concat_table}
