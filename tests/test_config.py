"""Bad configs fail once, clearly, naming the key."""

import subprocess
import sys

import pytest

from t2t_jax.config import load_config
from t2t_jax.errors import ConfigError


@pytest.mark.parametrize(
    "override, message",
    [
        ("--config.model.d_modle=256", "unknown config key 'model.d_modle'; valid keys under model: .*d_model"),
        (
            "--config.trian.steps=3",
            "unknown config key 'trian'; valid keys: checkpoint, data, final, model, optimizer, parallel, train",
        ),
        ("--config.model.d_model=500", "d_model = 500 is not divisible by model.num_heads = 8"),
        ("--config.model.dropout=-0.1", r"model.dropout = -0.1: a dropout rate must be in \[0, 1\)"),
        ("--config.model.ln=middle", "model.ln = 'middle': must be one of"),
        ("--config.model.num_heads=2.5", "expected int"),
        ("--config.train.steps", "not of the form"),
    ],
)
def test_bad_overrides(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config("base", [override])


def test_good_override_changes_value():
    config = load_config(
        "base", ["--config.model.num_heads=4", "--config.model.ln=pre", "--config.optimizer.constant=2"]
    )
    assert config.model.num_heads == 4 and config.model.ln == "pre" and config.optimizer.constant == 2.0


def test_cli_prints_one_line_error_without_traceback(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "t2t_jax",
            "train",
            "--config",
            "smoke",
            "--workdir",
            str(tmp_path),
            "--config.model.foo=1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("error: unknown config key 'model.foo'")


RECIPES = [
    "base",
    "big",
    "wmt14_ende_base",
    "wmt14_ende_big",
    "wmt14_enfr_big",
]


@pytest.mark.parametrize(
    "recipe",
    RECIPES + [f"table3:{row}" for row in ("base", "A_h1", "B_dk16", "C_n2", "D_ls0.2", "E_learned", "big")],
)
def test_recipes_divide_over_8_to_128_devices_and_say_what_to_use_beyond(recipe):
    from t2t_jax.data.geometry import batch_rows

    data = load_config(recipe).data
    assert 24_000 <= data.batch_tokens <= 33_000  # §5.1: ~25k tokens a side (packed rows are not full)
    for devices in (8, 16, 32, 64, 128):
        rows = batch_rows(data, devices, processes=devices // 8)  # 8 devices per host
        assert rows * (devices // 8) * data.max_length == data.batch_tokens
    for devices, nearest in ((256, 65536), (512, 131072)):
        with pytest.raises(
            ConfigError,
            match=f"{devices} devices cannot share.*nearest valid data.batch_tokens: {nearest} \\({devices} rows\\)",
        ):
            batch_rows(data, devices)


def test_indivisible_batch_names_the_numbers_and_the_nearest_valid_sizes():
    from t2t_jax.data.geometry import batch_rows

    data = load_config("base", ["--config.data.batch_tokens=25000"]).data
    with pytest.raises(
        ConfigError,
        match=r"batch_tokens = 25000 with data.max_length = 256 gives 97.6562 rows per "
        r"batch, which 8 devices.*24576 \(96 rows\) or 26624 \(104 rows\)",
    ):
        batch_rows(data, 8)


def test_indivisible_batch_fails_before_any_data_is_read(tmp_path):
    for lang in ("en", "de"):
        (tmp_path / f"c.{lang}").write_text("a b c\n" * 10)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "t2t_jax",
            "train",
            "--config",
            "smoke",
            "--workdir",
            str(tmp_path / "w"),
            "--config.data.batch_tokens=1000",
            "--config.data.dataset=parallel_text",
            f"--config.data.train_prefix={tmp_path / 'c'}",
            f"--config.data.validation_prefix={tmp_path / 'c'}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "cannot share equally" in result.stderr
    assert not (tmp_path / "w" / "spm.model").exists()  # the corpus was never read


@pytest.mark.parametrize(
    "override, message",
    [
        ("--config.train.nonfinite=skp", "train.nonfinite = 'skp': choose one of stop, skip"),
        ("--config.parallel.launcher=pmpa", "parallel.launcher = 'pmpa': choose one of mesh, pmap"),
        ("--config.data.spm_model_type=bep", "data.spm_model_type = 'bep': choose one of bpe, unigram"),
        ("--config.checkpoint.keep=0", "checkpoint.keep = 0: must be at least 1"),
        ("--config.train.log_every=0", "train.log_every = 0: must be at least 1"),
        ("--config.train.accum_steps=0", "train.accum_steps = 0: must be at least 1"),
        ("--config.final.beam=0", r"final.beam = 0: must be at least 1 \(beam 1 is greedy search\)"),
        ("--config.train.label_smoothing=1.0", r"train.label_smoothing = 1.0: must be in \[0, 1\)"),
        ("--config.parallel.sync_every=0", "parallel.sync_every = 0: must be at least 1"),
    ],
)
def test_run_config_values_are_checked_at_load_time(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config("smoke", [override])


def test_accum_steps_must_divide_rows_per_device():
    from t2t_jax.data.geometry import batch_rows

    data = load_config("smoke").data  # 64 rows of 16
    assert batch_rows(data, 8, accum_steps=4) == 64
    with pytest.raises(ConfigError, match="train.accum_steps = 3 does not divide the 8 rows per device"):
        batch_rows(data, 8, accum_steps=3)


def test_a_config_file_that_fails_names_its_file_and_line(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("from t2t_jax.config import default_config\n\ndef get_config():\n    c = default_config(\n")
    with pytest.raises(ConfigError, match=r"broken.py:4: '\(' was never closed"):
        load_config(str(broken))
    with pytest.raises(ConfigError, match=r"config/presets/table3.py:\d+: ValueError: unknown Table 3 row 'Z'"):
        load_config("table3:Z")
    result = subprocess.run(
        [sys.executable, "-m", "t2t_jax", "train", "--config", str(broken), "--workdir", str(tmp_path / "w")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2 and result.stderr.startswith("error: ") and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "recipe, changes",
    [
        ("multi30k_deen", ["data.source_lang: 'en' -> 'de'", "data.target_lang: 'de' -> 'en'"]),
        ("multi30k_relative", ["model.attention: 'dot_product' -> 'relative'"]),
    ],
)
def test_main_job_variants_change_only_what_they_say(recipe, changes):
    """A results-table row beside the main job is comparable only if its recipe differs in its stated lever alone."""
    from t2t_jax.train.ablation import config_changes, flat_config

    main, other = (flat_config(load_config(name).to_dict()) for name in ("multi30k", recipe))
    assert config_changes(main, other) == changes
