"""Careless use of the commands: one `error:` line, the exit code of its kind, nothing lost — export never
writes over what it did not create, translate checks its output before decoding and reads bad bytes cleanly."""

import subprocess
import sys

import pytest

from t2t_jax.config import load_config
from t2t_jax.train.loop import train


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    work = tmp_path_factory.mktemp("export_safety") / "work"
    train(
        load_config(
            "smoke",
            ["--config.train.steps=2", "--config.data.batch_tokens=256", "--config.train.eval_every=2"],
        ),
        str(work),
        printer=lambda *a, **k: None,
    )
    return work


def snapshot(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def export(workdir, out, *extra, fmt="safetensors"):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "t2t_jax",
            "export",
            "--workdir",
            str(workdir),
            "--format",
            fmt,
            "--out",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return result.returncode, result.stdout + result.stderr


def test_export_refuses_the_workdir_and_changes_nothing(workdir):
    before = snapshot(workdir)
    for out in (workdir, workdir.parent):
        code, output = export(workdir, out)
        assert code == 2 and "is the workdir" in output and "Traceback" not in output, output
    assert snapshot(workdir) == before


def test_export_refuses_a_foreign_directory_unless_overwrite_and_keeps_user_files(workdir, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    code, output = export(workdir, out)
    assert code == 2 and "not empty and is not a previous safetensors export" in output, output
    assert snapshot(out) == {"notes.txt": b"my notes"}
    code, output = export(workdir, out, "--overwrite")
    assert code == 0, output
    assert (out / "notes.txt").read_text() == "my notes" and (out / "params.safetensors").exists()


def test_export_goes_again_over_its_own_previous_export_only(workdir, tmp_path):
    out = tmp_path / "export"
    assert export(workdir, out)[0] == 0
    code, output = export(workdir, out)
    assert code == 0, output  # a previous export of the same format
    code, output = export(workdir, out, fmt="npz")
    assert code == 2 and "not a previous npz export" in output
    assert not list(tmp_path.glob(".export.partial-*"))  # no staging directory left behind


def translate(workdir, *args, stdin=b""):
    result = subprocess.run(
        [sys.executable, "-m", "t2t_jax", "translate", "--workdir", str(workdir), *args],
        input=stdin,
        capture_output=True,
        timeout=300,
    )
    return result.returncode, result.stderr.decode()


def test_translate_checks_its_output_folder_before_decoding(workdir, tmp_path):
    code, err = translate(workdir, "--output", str(tmp_path / "missing" / "out.txt"), stdin=b"4 5 6\n")
    assert code == 2 and "the folder" in err and "does not exist" in err and "Traceback" not in err, err
    assert "translated" not in err  # refused before any decoding


def test_translate_invalid_utf8_on_stdin_is_one_error(workdir):
    code, err = translate(workdir, stdin=b"ok line\n\xff\xfe bad\n")
    assert code == 3 and "<stdin>:2: invalid UTF-8" in err and "Traceback" not in err, err
    code, err = translate(workdir, "--beam", "-1", stdin=b"x\n")
    assert code == 2 and "need beam >= 1" in err
    code, err = translate(workdir, "--stop", "early", stdin=b"x\n")
    assert code == 2 and "--stop 'early': beam search stops by one of exact, beam_finished" in err, err


def train_command(tmp_path, workdir, *extra):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "t2t_jax",
            "train",
            "--config",
            "smoke",
            "--workdir",
            str(workdir),
            "--config.data.batch_tokens=256",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return result.returncode, result.stderr


def test_train_refuses_a_workdir_that_is_a_file(tmp_path):
    file = tmp_path / "notes.txt"
    file.write_text("mine")
    code, err = train_command(tmp_path, file)
    assert code == 2 and "is a file, not a directory" in err and "Traceback" not in err, err
    assert file.read_text() == "mine"


def test_train_with_every_example_filtered_and_a_nan_stop_are_one_line_each(tmp_path):
    (tmp_path / "t.en").write_text("a b c d e f g h i j k l m n o p q r s t\n" * 50)
    (tmp_path / "t.de").write_text("a b c d e f g h i j k l m n o p q r s t\n" * 50)
    code, err = train_command(
        tmp_path,
        tmp_path / "w",
        "--config.data.dataset=parallel_text",
        f"--config.data.train_prefix={tmp_path / 't'}",
        "--config.data.max_length=4",
        f"--config.data.validation_prefix={tmp_path / 't'}",
        "--config.model.vocab_size=24",
        "--config.data.batch_tokens=32",
    )
    assert code == 3 and "are longer than data.max_length = 4" in err and "Traceback" not in err, err
    code, err = train_command(tmp_path, tmp_path / "nan", "--config.train.steps=6", "--config.optimizer.constant=1e30")
    assert code == 5 and "non-finite training loss" in err and "Traceback" not in err, err


def test_a_missing_test_split_fails_before_training(tmp_path):
    for name in ("t", "v"):
        (tmp_path / f"{name}.en").write_text("a b\n" * 20)
        (tmp_path / f"{name}.de").write_text("b a\n" * 20)
    code, err = train_command(
        tmp_path,
        tmp_path / "w",
        "--config.data.dataset=parallel_text",
        f"--config.data.train_prefix={tmp_path / 't'}",
        f"--config.data.validation_prefix={tmp_path / 'v'}",
        f"--config.data.test_prefix={tmp_path / 'absent'}",
        "--config.final.splits=test",
    )
    assert code == 3 and "absent.en: missing file for split 'test'" in err, err
    assert not (tmp_path / "w" / "checkpoints").exists()  # nothing was trained
