"""Bad configs fail once, clearly, naming the key."""
import subprocess
import sys

import pytest

from t2t_jax.config import load_config
from t2t_jax.model.config import ConfigError


@pytest.mark.parametrize("override, message", [
    ("--config.model.d_modle=256", "unknown config key 'model.d_modle'; valid keys under model: .*d_model"),
    ("--config.trian.steps=3", "unknown config key 'trian'; valid keys: checkpoint, data, final, model, optimizer, parallel, train"),
    ("--config.model.d_model=500", "d_model = 500 is not divisible by model.num_heads = 8"),
    ("--config.model.dropout=-0.1", r"model.dropout = -0.1: a dropout rate must be in \[0, 1\)"),
    ("--config.model.ln=middle", "model.ln = 'middle': must be one of"),
    ("--config.model.num_heads=2.5", "expected int"),
    ("--config.train.steps", "not of the form"),
])
def test_bad_overrides(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config("experiments/base.py", [override])


def test_good_override_changes_value():
    config = load_config("experiments/base.py", ["--config.model.num_heads=4", "--config.model.ln=pre",
                                                  "--config.optimizer.constant=2"])
    assert config.model.num_heads == 4 and config.model.ln == "pre" and config.optimizer.constant == 2.0


def test_cli_prints_one_line_error_without_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "t2t_jax.train", "--config", "experiments/smoke.py",
                           "--workdir", str(tmp_path), "--config.model.foo=1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("error: unknown config key 'model.foo'")
