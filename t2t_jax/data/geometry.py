"""Batch geometry, checked before any data is read: ``data.batch_tokens / data.max_length`` rows per global batch,
an equal share per device (and so per process)."""

from __future__ import annotations

from t2t_jax.errors import ConfigError


def batch_rows(data_config, devices: int, processes: int = 1, accum_steps: int = 1) -> int:
    """Rows per process of a global batch; a ConfigError with the nearest valid ``batch_tokens`` otherwise
    (each device's rows must also split into ``accum_steps`` equal micro-batches)."""
    tokens, length = int(data_config.batch_tokens), int(data_config.max_length)
    rows = tokens // length
    if rows >= devices and rows % devices == 0 and tokens == rows * length:
        if (rows // devices) % accum_steps:
            raise ConfigError(
                f"train.accum_steps = {accum_steps} does not divide the {rows // devices} rows per "
                f"device (data.batch_tokens = {tokens} / data.max_length = {length} / {devices} "
                f"devices); choose a divisor of {rows // devices}"
            )
        return rows // processes
    below = (rows // devices) * devices
    options = [r * length for r in (below, below + devices) if r >= devices]
    nearest = " or ".join(f"{t} ({t // length} rows)" for t in options)
    raise ConfigError(
        f"data.batch_tokens = {tokens} with data.max_length = {length} gives {tokens / length:g} rows "
        f"per batch, which {devices} devices cannot share equally (each needs the same whole number "
        f"of {length}-token rows); nearest valid data.batch_tokens: {nearest}"
    )
