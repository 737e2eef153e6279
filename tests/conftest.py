"""Shared fixtures: a tiny model config and its params."""

import os

# Eight CPU devices for the data-parallel tests; must be set before jax is imported.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()

import jax  # noqa: E402
import pytest  # noqa: E402

from t2t_jax.model import ModelConfig  # noqa: E402
from t2t_jax.train.state import init_params  # noqa: E402


@pytest.fixture(scope="session")
def tiny_config():
    return ModelConfig(
        vocab_size=40, d_model=32, num_heads=4, d_ff=64, encoder_layers=2, decoder_layers=2, dropout=0.1, max_len=64
    )


@pytest.fixture(scope="session")
def tiny_params(tiny_config):
    return init_params(tiny_config, seed=0)


@pytest.fixture
def cpu_devices():
    return jax.devices("cpu")
