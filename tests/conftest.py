"""Shared fixtures (a tiny model config and its params), the CPU pinned, and T2T_REQUIRE_ALL=1: every skip for
missing data or a missing extra becomes a failure, so a run that needs everything (CI) cannot pass by skipping."""

import os

# The suite's tests are CPU tests (eight host devices below); an accelerator is checked by bench/device_check.py.
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# Eight CPU devices for the data-parallel tests; must be set before jax is imported.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()

import jax  # noqa: E402
import pytest  # noqa: E402

from t2t_jax.model import ModelConfig  # noqa: E402
from t2t_jax.train.state import init_params  # noqa: E402

REQUIRE_ALL = os.environ.get("T2T_REQUIRE_ALL") == "1"
MISSING = ("could not import", "No module named", "not found at")  # importorskip's words, and the data skips'


def _missing_reason(report) -> str | None:
    """The skip's reason when it is for missing data or a missing extra, else None."""
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return reason if any(word in reason for word in MISSING) else None


def _require(report) -> None:
    reason = _missing_reason(report) if REQUIRE_ALL and report.skipped else None
    if reason:
        report.outcome = "failed"
        report.longrepr = f"T2T_REQUIRE_ALL=1 turns this skip into a failure: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _require(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):  # a module-level importorskip skips at collection
    outcome = yield
    _require(outcome.get_result())


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
