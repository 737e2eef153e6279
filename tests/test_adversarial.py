"""A careless, hurried user against every command: each case asserts the exit code of its kind
(t2t_jax/errors.py EXIT_CODES), exactly one ``error:`` line and no traceback, and that no file the user had
changed. Faults the other suites cover are listed in docs/training.md ("What fails how"); here are the ones
that need a real small disk, a real read-only folder, and the --debug switch."""

import contextlib
import io
import os
import shutil
import subprocess
import sys

import pytest

from t2t_jax.errors import EXIT_CHECKPOINT, EXIT_DATA, EXIT_IO, EXIT_USAGE

SMOKE = ["--config", "smoke", "--config.data.batch_tokens=256", "--config.train.eval_every=2"]


def run(command, *args, stdin=None, env=None, prefix=(), timeout=300):
    """(exit code, stdout, stderr) of ``python -m t2t_jax <command> args``."""
    result = subprocess.run(
        [*prefix, sys.executable, "-m", "t2t_jax", command, *map(str, args)],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def run_here(command, args, capfd, monkeypatch):
    """(exit code, stderr) of the command's ``main`` called in this process (the same wrapped entry point the
    console script runs; seconds faster than a fresh interpreter, for the cases that fail before any work)."""
    import importlib

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    capfd.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        importlib.import_module(f"t2t_jax.cli.{command}").main([str(a) for a in args])
    return exit_info.value.code, capfd.readouterr().err


def assert_one_error(code, err, want_code, fragment):
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == want_code and len(errors) == 1 and fragment in errors[0], (code, err[-3000:])
    assert "Traceback" not in err, err[-3000:]


def snapshot(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A 2-step smoke run: the target of the read-side commands."""
    work = tmp_path_factory.mktemp("adversarial") / "work"
    code, out, err = run("train", *SMOKE, "--workdir", work, "--config.train.steps=2")
    assert code == 0, out + err
    return work


# --- every command: a bad argument or input is one line with its kind's exit code, before any work ---


W = "{work}"  # the module's workdir, substituted below


@pytest.mark.parametrize(
    "command, args, want_code, fragment",
    [
        ("train", ["--workdir", W, "--config.model.d_k=abc"], EXIT_USAGE, "model.d_k = 'abc': must be an integer"),
        ("train", ["--workdir", W, "--config.final.splits=tset"], EXIT_USAGE, "final.splits: unknown split 'tset'"),
        ("train", ["--workdir", W, "--config.data.dataset=wmt99"], EXIT_USAGE, "data.dataset = 'wmt99'; known:"),
        ("train", ["--workdir", W, "--config.data.batch_tokens=100"], EXIT_USAGE, "nearest valid data.batch_tokens"),
        ("train", ["--workdir", W, "--config.model.d_model=128"], EXIT_USAGE, "model.d_model: saved 64 vs now 128"),
        ("train", ["--workdir", "{user}/notes.txt/w"], EXIT_USAGE, "notes.txt is a file, not a directory"),
        ("train", ["--workdir", "{tmp}/w", "--config", "{user}/notes.txt"], EXIT_USAGE, "ending in .py"),
        ("translate", ["--workdir", W, "--input", "{user}"], EXIT_DATA, "a directory, not a text file"),
        ("average", ["--workdir", W, "--last", "0"], EXIT_USAGE, "--last 0: average at least 1 checkpoint"),
        ("average", ["--workdir", W, "--last", "99"], EXIT_USAGE, "--last 99: only"),
        ("average", ["--workdir", W, "--last", "1", "--out", W], EXIT_USAGE, "is the workdir, holds it"),
        ("average", ["--workdir", W, "--last", "1", "--out", W + "/checkpoints"], EXIT_USAGE, "checkpoint folders"),
        ("average", ["--workdir", W, "--last", "1", "--out", "{user}"], EXIT_USAGE, "not a previous average"),
        (
            "export",
            ["--workdir", W, "--format", "npz", "--checkpoint", "12345", "--out", "{tmp}/x"],
            EXIT_USAGE,
            "12345",
        ),
        ("export", ["--workdir", W, "--format", "npz", "--out", "{user}/notes.txt/x"], EXIT_USAGE, "is a file"),
        ("import_marian", ["--hf", "{tmp}", "--out", W], EXIT_USAGE, "import into a new workdir"),
        ("translate", ["--workdir", W, "--beam", "0"], EXIT_USAGE, "--beam 0: need beam >= 1"),
        ("evaluate", ["--workdir", W, "--split", "test"], EXIT_USAGE, "generated in memory: it has no test files"),
        ("preprocess", ["--config", "smoke", "--out", "{tmp}/p"], EXIT_USAGE, "generated in memory"),
        ("ablate", ["--rows", "Z", "--steps", "2", "--workdir", "{tmp}/ab"], EXIT_USAGE, "'Z' matches no Table 3 row"),
    ],
)
def test_each_command_refuses_bad_input_with_one_line_and_changes_nothing(
    workdir, tmp_path, capfd, monkeypatch, command, args, want_code, fragment
):
    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("my notes")
    before, mine = snapshot(workdir), snapshot(user)
    args = [a.replace(W, str(workdir)).replace("{tmp}", str(tmp_path)).replace("{user}", str(user)) for a in args]
    code, err = run_here(command, [*(SMOKE if command == "train" else []), *args], capfd, monkeypatch)
    assert_one_error(code, err, want_code, fragment)
    assert snapshot(workdir) == before and snapshot(user) == mine
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # nothing new written


def test_curves_are_drawn_for_a_workdir_at_any_time(workdir):
    before = snapshot(workdir)
    code, out, err = run("visualize", "--workdir", workdir, "--curves")
    assert code == 0 and "curves.png" in out, err
    after = snapshot(workdir)
    assert after["curves.png"][:4] == b"\x89PNG" and {k: v for k, v in after.items() if k != "curves.png"} == {
        k: v for k, v in before.items() if k != "curves.png"
    }


def test_data_errors_have_their_own_exit_code(workdir, tmp_path):
    code, _, err = run("translate", "--workdir", workdir, stdin=b"ok\n\xff\xfe bad\n")
    assert_one_error(code, err, EXIT_DATA, "<stdin>:2: invalid UTF-8")
    (tmp_path / "src.txt").write_text("a\nb\n")
    (tmp_path / "ref.txt").write_text("a\n")
    code, _, err = run("evaluate", "--workdir", workdir, "--src", tmp_path / "src.txt", "--ref", tmp_path / "ref.txt")
    lines = f"{tmp_path / 'src.txt'} has 2 lines but {tmp_path / 'ref.txt'} has 1; parallel files must be line-aligned"
    assert_one_error(code, err, EXIT_DATA, lines)


def test_a_missing_workdir_file_is_an_io_error(tmp_path):
    (tmp_path / "empty").mkdir()
    code, _, err = run("export", "--workdir", tmp_path / "empty", "--format", "npz", "--out", tmp_path / "x")
    assert_one_error(code, err, EXIT_IO, "config.json")
    assert not (tmp_path / "x").exists()


# --- --debug: the traceback on demand, the same one line and exit code ---


def test_debug_adds_the_traceback_and_keeps_the_line_and_code(workdir):
    bad = b"\xff\n"
    quiet = run("translate", "--workdir", workdir, stdin=bad)
    loud = run("translate", "--workdir", workdir, "--debug", stdin=bad)
    by_env = run("translate", "--workdir", workdir, stdin=bad, env={"T2T_DEBUG": "1"})
    assert_one_error(quiet[0], quiet[2], EXIT_DATA, "invalid UTF-8")
    for code, _, err in (loud, by_env):
        assert code == EXIT_DATA and "Traceback" in err and err.strip().splitlines()[-1].startswith("error: ")


# --- a real small disk ---


@contextlib.contextmanager
def small_disk(path, size):
    """A tmpfs of ``size`` at ``path`` (root in a container that allows mounts), or skip."""
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def test_a_disk_too_small_for_one_checkpoint_is_refused_before_any_work(tmp_path):
    with small_disk(tmp_path / "disk", "1m") as disk:
        code, _, err = run("train", *SMOKE, "--workdir", disk / "w", "--config.train.steps=4")
        assert_one_error(code, err, EXIT_CHECKPOINT, "but one checkpoint of this model needs ~0.00")
        assert not (disk / "w" / "checkpoints").exists() and not (disk / "w" / "config.json").exists()


@pytest.mark.slow
def test_a_disk_that_fills_during_training_stops_at_once_and_keeps_the_last_checkpoint(tmp_path):
    """8 MB: the start-up check passes (one checkpoint is ~3 MB), the third save does not fit."""
    from t2t_jax.checkpoint.params import load_params

    with small_disk(tmp_path / "disk", "8m") as disk:
        work = disk / "w"
        code, out, err = run(
            "train", *SMOKE, "--workdir", work, "--config.train.steps=40", "--config.checkpoint.every_steps=2"
        )
        assert_one_error(code, err, EXIT_CHECKPOINT, "the last complete checkpoint to resume from is step")
        kept = int(err.split("checkpoint to resume from is step ")[1].split()[0].rstrip(".;,"))
        assert kept >= 2 and load_params(work, "latest")[0] == kept  # still readable
        assert "done: step 40" not in out


# --- a real read-only folder (root ignores permission bits: drop that capability for the child) ---

NO_OVERRIDE = ["setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search"]


@pytest.fixture
def read_only(tmp_path):
    """A function making a folder read-only, undone at teardown; skips where setpriv cannot drop the cap."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv not available")
    probe = tmp_path / "probe"
    probe.mkdir()
    probe.chmod(0o555)
    if subprocess.run([*NO_OVERRIDE, "touch", str(probe / "x")], capture_output=True).returncode == 0:
        pytest.skip("cannot drop CAP_DAC_OVERRIDE here")
    folders = []

    def make(folder):
        folders.append(folder)
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)

    yield make
    for folder in folders:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_read_only_workdir_and_output_folders_are_one_line_each_and_untouched(workdir, tmp_path, read_only):
    frozen = tmp_path / "frozen"
    shutil.copytree(workdir, frozen)
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    read_only(frozen)
    read_only(outputs)
    before = snapshot(frozen)
    code, _, err = run("train", *SMOKE, "--workdir", frozen, "--config.train.steps=4", prefix=NO_OVERRIDE)
    assert_one_error(code, err, EXIT_USAGE, f"--workdir {frozen} is not writable")
    code, _, err = run(
        "translate", "--workdir", frozen, "--output", outputs / "out.txt", stdin=b"4 5 6\n", prefix=NO_OVERRIDE
    )
    assert_one_error(code, err, EXIT_USAGE, "cannot write there")
    code, _, err = run("export", "--workdir", frozen, "--format", "npz", "--out", outputs / "npz", prefix=NO_OVERRIDE)
    assert code == EXIT_IO and "Permission denied" in err and "Traceback" not in err, err
    code, _, err = run("average", "--workdir", frozen, "--last", "1", prefix=NO_OVERRIDE)
    assert code == EXIT_IO and "Traceback" not in err, err
    assert snapshot(frozen) == before and not list(outputs.iterdir())
