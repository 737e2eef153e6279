"""Checkpoints: exact resume after kill -9, SIGTERM save, topology change, averaging, damage, eviction."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest
from flax.traverse_util import flatten_dict

from t2t_jax.checkpoint.average import average_last
from t2t_jax.checkpoint.manager import Checkpointer, abstract_like
from t2t_jax.checkpoint.params import load_params
from t2t_jax.config import load_config, model_config
from t2t_jax.errors import ConfigError
from t2t_jax.model import Transformer
from t2t_jax.train.history import read_history
from t2t_jax.train.loop import train
from t2t_jax.train.parallel import host_tree
from t2t_jax.train.state import create_state, make_optimizer

RUN = [
    "--config.train.steps=20",
    "--config.checkpoint.every_steps=10",
    "--config.checkpoint.every_minutes=0",
    "--config.train.log_every=1",
    "--config.train.eval_every=20",
    "--config.model.dropout=0.1",
    "--config.data.batch_tokens=256",
]
ONE_DEVICE = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=1"}


def command(workdir, *extra):
    return [
        sys.executable,
        "-m",
        "t2t_jax",
        "train",
        "--config",
        "smoke",
        "--workdir",
        str(workdir),
        *RUN,
        *extra,
    ]


def step_losses(text):
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"step (\d+)/20 \[[#-]+\] +\d+% \| loss (\S+)", text)}


def run_until(cmd, predicate, sig):
    """Start cmd, send ``sig`` once predicate(output so far) holds; return (returncode, output)."""
    proc = subprocess.Popen(cmd, env=ONE_DEVICE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, deadline = [], time.time() + 240
    for line in proc.stdout:
        out.append(line)
        if predicate("".join(out)):
            proc.send_signal(sig)
            break
        assert time.time() < deadline, "".join(out)
    rest, _ = proc.communicate(timeout=120)
    return proc.returncode, "".join(out) + rest


def final_params(workdir):
    return flatten_dict(load_params(workdir, "latest")[1], sep="/")


@pytest.mark.slow
def test_kill_9_then_resume_is_identical(tmp_path):
    straight = subprocess.run(command(tmp_path / "a"), env=ONE_DEVICE, capture_output=True, text=True, timeout=240)
    assert straight.returncode == 0, straight.stdout + straight.stderr
    workdir = tmp_path / "b"
    saved = lambda out: "step 12/" in out and (workdir / "checkpoints" / "10").is_dir()  # noqa: E731
    # The killed run has no end in reach (a 20-step run can finish before the kill lands); checkpoints it
    # completed after step 10 are removed, leaving the disk as a kill between the saves at 10 and 20 does.
    code, first = run_until(command(workdir, "--config.train.steps=100000"), saved, signal.SIGKILL)
    assert code == -signal.SIGKILL
    killed = [h["step"] for h in read_history(workdir) if h["split"] == "train"]
    assert killed[:12] == list(range(1, 13))  # history.jsonl is written as the run trains: kill -9 keeps it
    for later in (workdir / "checkpoints").iterdir():
        if later.name.isdigit() and int(later.name) > 10:
            shutil.rmtree(later)
    resumed = subprocess.run(command(workdir), env=ONE_DEVICE, capture_output=True, text=True, timeout=240)
    assert resumed.returncode == 0 and "resumed from the checkpoint at step 10" in resumed.stdout
    expected, got = step_losses(straight.stdout), step_losses(resumed.stdout)
    assert sorted(got) == list(range(11, 21))
    assert all(got[s] == expected[s] for s in got)
    history = [(h["step"], h["loss"]) for h in read_history(workdir) if h["split"] == "train"]
    straight_history = [(h["step"], h["loss"]) for h in read_history(tmp_path / "a") if h["split"] == "train"]
    assert history == straight_history  # steps 11.. once: the resumed run dropped the killed run's lines after 10
    a, b = final_params(tmp_path / "a"), final_params(workdir)
    assert all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.slow
def test_sigterm_saves_and_exits_zero(tmp_path):
    code, out = run_until(
        command(tmp_path, "--config.train.steps=20000", "--config.train.log_every=100"),
        lambda o: "step 300/" in o,
        signal.SIGTERM,
    )
    assert code == 0, out
    saved = int(re.search(r"SIGTERM: saved the checkpoint at step (\d+)", out).group(1))
    assert saved >= 300 and load_params(tmp_path, "latest")[0] == saved
    again = subprocess.run(
        command(tmp_path, f"--config.train.steps={saved + 5}"),
        env=ONE_DEVICE,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert f"resumed from the checkpoint at step {saved}" in again.stdout and f"done: step {saved + 5}" in again.stdout


def small_run(workdir, steps=6, extra=()):
    config = load_config(
        "smoke",
        [
            f"--config.train.steps={steps}",
            "--config.checkpoint.every_steps=2",
            "--config.train.eval_every=2",
            "--config.data.batch_tokens=256",
            *extra,
        ],
    )
    return config, train(config, str(workdir), printer=lambda *a, **k: None)


def test_mesh_checkpoint_restores_on_one_device(tmp_path):
    assert jax.device_count() == 8
    config, summary = small_run(tmp_path)
    cfg = model_config(config)
    tx, _ = make_optimizer(config.optimizer, cfg, config.train.steps)
    one = jax.sharding.SingleDeviceSharding(jax.devices("cpu")[1])
    step, state, _, _ = Checkpointer(tmp_path).restore_latest(abstract_like(create_state(cfg, tx, 0), one))
    assert step == 6 and state.params["embed"]["embedding"].sharding == one
    tokens = np.full((2, 5), 7, np.int32)
    model = Transformer(cfg)
    on_one = model.apply({"params": state.params}, tokens, tokens)
    on_mesh = model.apply({"params": host_tree(summary["state"].params)}, tokens, tokens)
    np.testing.assert_array_equal(np.asarray(on_one), np.asarray(on_mesh))


def test_averaging_equals_numpy_mean(tmp_path):
    small_run(tmp_path)
    steps = average_last(tmp_path, 3, tmp_path / "averaged", log=lambda *_: None)
    assert steps == [2, 4, 6]
    parts = [flatten_dict(load_params(tmp_path, str(s))[1], sep="/") for s in steps]
    averaged = flatten_dict(load_params(tmp_path, "averaged")[1], sep="/")
    for key, value in averaged.items():
        np.testing.assert_allclose(value, np.mean([p[key] for p in parts], axis=0), rtol=1e-6, atol=1e-7)
    with pytest.raises(ConfigError, match="only 3 checkpoint"):
        average_last(tmp_path, 9, tmp_path / "x", log=lambda *_: None)
    # An earlier range re-averaged into the same directory replaces the later average (budget studies).
    assert average_last(tmp_path, 2, tmp_path / "averaged", log=lambda *_: None, until=5) == [2, 4]
    step, until4 = load_params(tmp_path, "averaged")
    assert step == 4
    np.testing.assert_allclose(
        flatten_dict(until4, sep="/")["embed/embedding"],
        (parts[0]["embed/embedding"] + parts[1]["embed/embedding"]) / 2,
        rtol=1e-6,
        atol=1e-7,
    )
    from t2t_jax.decode.decoder import translate_ids  # the averaged checkpoint decodes

    cfg = model_config(load_config("smoke"))
    source = np.full((2, 6), 5, np.int32)
    tokens, scores = translate_ids(load_params(tmp_path, "averaged")[1], source, cfg=cfg, beam=2)
    by_hand = jax.tree_util.tree_map(
        lambda *p: np.mean(p, axis=0), *[load_params(tmp_path, "2")[1], load_params(tmp_path, "4")[1]]
    )
    want_tokens, want_scores = translate_ids(by_hand, source, cfg=cfg, beam=2)
    np.testing.assert_array_equal(np.asarray(tokens), np.asarray(want_tokens))
    np.testing.assert_allclose(np.asarray(scores), np.asarray(want_scores), rtol=1e-5)


def truncate_checkpoint(workdir, step):
    for file in (workdir / "checkpoints" / str(step) / "state").rglob("*"):
        if file.is_file() and file.stat().st_size > 0 and "manifest" not in file.name:
            file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])


def test_truncated_latest_falls_back_to_previous_and_is_replaced(tmp_path):
    config, _ = small_run(tmp_path, steps=4)
    truncate_checkpoint(tmp_path, 4)
    messages = []
    train(
        load_config(
            "smoke",
            [
                "--config.train.steps=5",
                "--config.data.batch_tokens=256",
                "--config.train.eval_every=5",
                "--config.checkpoint.every_steps=2",
            ],
        ),
        str(tmp_path),
        printer=lambda *a, **k: messages.append(a[0]),
    )
    text = "\n".join(messages)
    assert "checkpoint at step 4 is unreadable" in text and "resumed from the checkpoint at step 2" in text
    assert load_params(tmp_path, "4")[0] == 4  # the run's save at step 4 replaced the damaged one


def test_all_checkpoints_unreadable_is_an_error_not_a_restart(tmp_path):
    from t2t_jax.errors import CheckpointError

    small_run(tmp_path, steps=4)
    for step in (2, 4):
        truncate_checkpoint(tmp_path, step)
    before = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    with pytest.raises(CheckpointError, match=r"every checkpoint in .* is unreadable \(steps \[2, 4\].* move"):
        small_run(tmp_path, steps=6)
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == before


def test_keep_k_never_evicts_best_or_latest(tmp_path):
    config = load_config("smoke")
    cfg = model_config(config)
    tx, _ = make_optimizer(config.optimizer, cfg, config.train.steps)
    state = create_state(cfg, tx, 0)
    ck = Checkpointer(tmp_path, keep=2, async_save=False, log=lambda *_: None)
    for step in range(1, 7):
        ck.save(step, state, {"position": step}, {})
        metric = 10.0 if step == 2 else float(step) * 0.1
        if ck.is_better(metric):
            ck.save_best(step, state, {"position": step}, {}, metric=metric)
    ck.wait()
    assert ck.latest.all_steps() == [5, 6]
    assert ck.best.all_steps() == [2]


def test_incompatible_workdir_lists_differing_fields(tmp_path):
    small_run(tmp_path, steps=2)
    with pytest.raises(ConfigError, match=r"model.d_model: saved 64 vs now 32"):
        small_run(tmp_path, steps=3, extra=["--config.model.d_model=32"])


def test_nonfinite_loss_stops_with_step_and_keeps_checkpoint(tmp_path):
    small_run(tmp_path, steps=2)
    with pytest.raises(RuntimeError, match=r"non-finite training loss .* at step 4"):
        small_run(tmp_path, steps=6, extra=["--config.optimizer.constant=1e30"])
    assert load_params(tmp_path, "latest")[0] == 2


def test_options_added_since_a_save_read_as_defaults():
    from t2t_jax.checkpoint.manager import check_compatible

    current = load_config("smoke").to_dict()
    saved = {"model": {k: v for k, v in current["model"].items() if k != "activation"}}
    check_compatible(saved, current)  # no error: activation defaults to relu
    current["model"]["activation"] = "swish"
    with pytest.raises(ConfigError, match="model.activation: saved 'relu' vs now 'swish'"):
        check_compatible(saved, current)


def test_a_background_save_failure_stops_with_one_error_and_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    """A full disk during an async save: orbax fails in a background thread; the run must stop at the next
    save with one CheckpointError naming it, not train on without checkpoints (the one at step 2 stays)."""
    from orbax.checkpoint._src.serialization import ocdbt_utils

    from t2t_jax.errors import CheckpointError

    merge = ocdbt_utils.merge_ocdbt_per_process_files

    async def disk_full_at_step_4(directory, *args, **kwargs):
        if "/4." in str(directory):
            raise OSError(28, "No space left on device")
        return await merge(directory, *args, **kwargs)

    monkeypatch.setattr(ocdbt_utils, "merge_ocdbt_per_process_files", disk_full_at_step_4)
    with pytest.raises(
        CheckpointError, match=r"No space left on device; the last complete checkpoint to resume from is step 2"
    ):
        train(
            load_config(
                "smoke",
                [
                    "--config.train.steps=20",
                    "--config.checkpoint.every_steps=2",
                    "--config.checkpoint.every_minutes=0",
                    "--config.data.batch_tokens=256",
                    "--config.train.eval_every=100",
                ],
            ),
            str(tmp_path),
            printer=lambda *a, **k: None,
        )
    assert load_params(tmp_path, "latest")[0] == 2
