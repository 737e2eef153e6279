"""The multi-host fault matrix: real ``t2t-train`` processes on 127.0.0.1 (gloo), 2 CPU devices each.

Every run is bounded by a timeout; the model is the smallest that trains (d 32, one layer each side).
References are independent runs: an uninterrupted run for the resumes, one process on the same global
device count for pmap, and every example of an epoch counted from the workers' records for elastic resume.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "multihost_worker.py")
TINY = [
    "--config.model.d_model=32",
    "--config.model.d_ff=64",
    "--config.model.num_heads=2",
    "--config.model.encoder_layers=1",
    "--config.model.decoder_layers=1",
    "--config.data.batch_tokens=256",
    "--config.train.tensorboard=False",
    "--config.train.log_every=5",
    "--config.train.eval_every=100000",
    "--config.parallel.sync_every=5",
    "--config.checkpoint.every_minutes=0",
    "--config.checkpoint.keep=100",
]
STEPS = 150


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """N worker processes sharing one workdir; each one's output in <workdir>/../<name>.p<i>.log."""

    def __init__(self, workdir, processes, overrides, devices=2, name="run", logs=None, env=()):
        """``logs``: the folder for the logs (default: beside a local workdir); ``env``: extra variables."""
        self.workdir, self.logs = str(workdir), []
        if logs is None:
            os.makedirs(self.workdir, exist_ok=True)
        logs = logs or os.path.dirname(self.workdir)
        env = {
            **os.environ,
            "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
            "JAX_PLATFORMS": "cpu",
            "PYTHONUNBUFFERED": "1",
            **dict(env),
        }
        port = free_port()
        self.procs = []
        for i in range(processes):
            log = os.path.join(logs, f"{name}.p{i}.log")
            self.logs.append(log)
            with open(log, "w") as out:
                self.procs.append(
                    subprocess.Popen(
                        [sys.executable, WORKER, str(port), str(i), str(processes), self.workdir, *overrides],
                        cwd=ROOT,
                        env=env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )

    def output(self, i):
        with open(self.logs[i]) as log:
            return "".join(line for line in log if not line.startswith("[Gloo]"))

    def wait_for(self, text, timeout=120):
        deadline = time.monotonic() + timeout
        while text not in self.output(0):
            assert time.monotonic() < deadline and all(p.poll() is None for p in self.procs), self.output(0)
            time.sleep(0.2)

    def wait(self, timeout=180):
        """Return codes; every process is killed at the timeout (the test then fails: a hang)."""
        deadline = time.monotonic() + timeout
        try:
            for p in self.procs:
                p.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"hang: still running after {timeout} s\n" + "\n---\n".join(map(self.output, range(len(self.procs))))
            )
        finally:
            for p in self.procs:
                p.kill()
        return [p.returncode for p in self.procs]

    def records(self, kind, i, root=None):
        path = os.path.join(root or self.workdir, "records", f"p{i}.{kind}.jsonl")
        return [json.loads(line) for line in open(path)] if os.path.exists(path) else []


def run(workdir, processes, overrides, **kwargs):
    cluster = Cluster(workdir, processes, overrides, **kwargs)
    codes = cluster.wait()
    assert codes == [0] * processes, "\n---\n".join(map(cluster.output, range(processes)))
    return cluster


def train_losses(workdir):
    """[(step, smoothed train loss)] of history.jsonl's train entries, in file order (process 0 writes them)."""
    lines = [json.loads(line) for line in open(os.path.join(workdir, "history.jsonl"))]
    return [(h["step"], h["loss"]) for h in lines if h["split"] == "train"]


def assert_same_losses(workdir, reference):
    """Each step once, in order, with the uninterrupted run's loss: the interrupted run's lines up to the
    checkpoint the rerun resumed from (written as it trained), then the rerun's (it dropped the steps it redid)."""
    got, want = train_losses(workdir), train_losses(reference)
    assert [s for s, _ in got] == [s for s, _ in want]
    assert max(abs(a - b) for (_, a), (_, b) in zip(got, want)) < 1e-6, (got, want)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """Two processes, STEPS steps of at least 40 ms each (so at least 6 s of training on any machine), a timed
    checkpoint every second: no hang, both save the same steps."""
    workdir = tmp_path_factory.mktemp("uninterrupted") / "work"
    cluster = run(
        workdir,
        2,
        TINY
        + [
            f"--config.train.steps={STEPS}",
            "--config.checkpoint.every_steps=0",
            "--config.checkpoint.every_minutes=0.0167",
        ],
        name="uninterrupted",
        env={"T2T_TEST_STEP_SECONDS": "0.04"},
    )
    return cluster


def test_timed_checkpoints_are_agreed(uninterrupted):
    saves = [uninterrupted.records("saves", i) for i in range(2)]
    assert saves[0] == saves[1]
    assert len(saves[0]) >= 3 and saves[0][-1] == STEPS  # timed saves happened, and the last step
    assert all(s % 5 == 0 for s in saves[0])  # only at agreement steps (parallel.sync_every = 5)


def test_a_cooldown_started_by_the_time_budget_is_one_plan_on_every_process(tmp_path):
    """A 20 s budget whose cooldown (fraction 0.5) starts by time: both processes make the same plan at the
    same agreed step (a multiple of sync_every), save the same steps and finish without a hang."""
    workdir = tmp_path / "work"
    cluster = run(
        workdir,
        2,
        TINY
        + [
            "--config.train.steps=100000",
            "--config.train.max_minutes=0.33",
            "--config.optimizer.schedule=constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size*linear_cooldown",
            "--config.optimizer.cooldown_fraction=0.5",
            "--config.optimizer.cooldown_by_budget=True",
            "--config.checkpoint.every_steps=0",
        ],
        name="cooldown",
    )
    plans = [cluster.records("cooldown", i) for i in range(2)]
    assert len(plans[0]) == 1 and plans[0] == plans[1], plans
    (start, end), saves = plans[0][0], [cluster.records("saves", i) for i in range(2)]
    assert start % 5 == 0 and end == 2 * start and saves[0] == saves[1] and saves[0][-1] <= end, (plans, saves)
    assert f"to 0 at step {end}" in cluster.output(0)


def test_sigterm_to_one_process_saves_one_step_everywhere_and_resumes_exactly(tmp_path, uninterrupted):
    workdir = tmp_path / "work"
    common = TINY + [f"--config.train.steps={STEPS}", "--config.checkpoint.every_steps=0"]
    cluster = Cluster(workdir, 2, common, name="sigterm")
    cluster.wait_for("step 40/")
    cluster.procs[1].send_signal(signal.SIGTERM)  # preemption reaches one host
    assert cluster.wait(timeout=60) == [0, 0], cluster.output(0) + cluster.output(1)
    saves = [cluster.records("saves", i) for i in range(2)]
    assert saves[0] == saves[1] and len(saves[0]) == 1 and saves[0][0] < STEPS
    assert f"SIGTERM: saved the checkpoint at step {saves[0][0]}" in cluster.output(0)
    resumed = run(workdir, 2, common, name="sigterm_resume")
    assert f"resumed from the checkpoint at step {saves[0][0]}" in resumed.output(0)
    assert_same_losses(workdir, uninterrupted.workdir)


def test_kill_9_of_one_process_ends_the_other_with_an_error_and_the_rerun_resumes(tmp_path, uninterrupted):
    workdir = tmp_path / "work"
    common = TINY + [f"--config.train.steps={STEPS}", "--config.checkpoint.every_steps=20"]
    cluster = Cluster(
        workdir,
        2,
        common + ["--config.parallel.watchdog_seconds=8", "--config.parallel.heartbeat_seconds=120"],
        name="kill",
    )
    cluster.wait_for("step 45/")
    cluster.procs[1].kill()
    codes = cluster.wait(timeout=120)  # the bound on a hang; how soon it ends is the watchdog's line below
    # Either the watchdog ends the wait, or gloo sees the peer's socket close first: exit 75 (EXIT_PEER) and
    # one clear error line either way.
    assert codes[0] == 75 and "another process has probably died" in cluster.output(0), cluster.output(0)
    assert "error: waited" in cluster.output(0) or "error: a collective with the other processes failed" in (
        cluster.output(0)
    )
    resumed = run(workdir, 2, common, name="kill_resume")
    step = int(resumed.output(0).split("resumed from the checkpoint at step ")[1].split()[0])
    assert step in (20, 40)  # the last complete checkpoint (the one at 40 may have been cut short by the kill)
    assert_same_losses(workdir, uninterrupted.workdir)


def test_a_hung_process_is_named_by_the_watchdog(tmp_path):
    """A peer that is alive but stuck (SIGSTOP: its sockets stay open, so no collective fails): the other
    process exits 75 with the watchdog's line, within the bound."""
    cluster = Cluster(
        tmp_path / "work",
        2,
        TINY
        + [
            "--config.train.steps=100000",
            "--config.checkpoint.every_steps=0",
            "--config.parallel.watchdog_seconds=6",
            "--config.parallel.heartbeat_seconds=120",
        ],
        name="hung",
    )
    cluster.wait_for("step 20/")
    cluster.procs[1].send_signal(signal.SIGSTOP)
    try:
        cluster.procs[0].wait(timeout=120)  # the bound on a hang, not on the watchdog's speed
    finally:
        cluster.procs[1].kill()
    assert cluster.procs[0].returncode == 75, cluster.output(0)
    waited = re.search(r"error: waited (\d+) s \(parallel.watchdog_seconds = 6\) for train step", cluster.output(0))
    assert waited and int(waited.group(1)) >= 6, cluster.output(0)  # it waited its bound, then named the wait


def test_second_signal_exits_at_once(tmp_path):
    cluster = Cluster(tmp_path / "work", 1, TINY + ["--config.train.steps=100000"], name="second")
    cluster.wait_for("step 10/")
    cluster.procs[0].send_signal(signal.SIGSTOP)  # hold it so both signals arrive before it can act
    cluster.procs[0].send_signal(signal.SIGTERM)
    cluster.procs[0].send_signal(signal.SIGINT)
    cluster.procs[0].send_signal(signal.SIGCONT)
    (code,) = cluster.wait(timeout=30)
    # Pending signals are delivered lowest number first, so either may count as the second one.
    second = {128 + signal.SIGINT: "SIGINT", 128 + signal.SIGTERM: "SIGTERM"}
    assert code in second and f"second signal ({second[code]})" in cluster.output(0), (code, cluster.output(0))


def final_params(workdir):
    from flax.traverse_util import flatten_dict

    from t2t_jax.checkpoint.params import load_params

    return flatten_dict(load_params(workdir, "latest")[1], sep="/")


def test_pmap_and_mesh_on_two_processes_equal_mesh_on_one(tmp_path):
    common = TINY + ["--config.train.steps=10", "--config.checkpoint.every_steps=0", "--config.model.dropout=0.1"]
    run(tmp_path / "one", 1, common, devices=4, name="one")
    one = final_params(tmp_path / "one")
    for launcher in ("pmap", "mesh"):
        run(tmp_path / launcher, 2, common + [f"--config.parallel.launcher={launcher}"], devices=2, name=launcher)
        got = final_params(tmp_path / launcher)
        assert max(float(np.abs(got[k] - one[k]).max()) for k in one) < 1e-5, launcher


def write_corpus(prefix, lines, seed):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(30)]
    for lang, shift in (("en", 0), ("de", 7)):
        with open(f"{prefix}.{lang}", "w") as out:
            for _ in range(lines):
                n = int(rng.integers(1, 6))
                out.write(" ".join(words[(int(w) + shift) % 30] for w in rng.integers(0, 30, n)) + "\n")


def text_overrides(tmp_path, lines=240):
    write_corpus(tmp_path / "train", lines, seed=0)
    write_corpus(tmp_path / "val", 12, seed=1)
    return TINY + [
        "--config.data.dataset=parallel_text",
        f"--config.data.train_prefix={tmp_path / 'train'}",
        f"--config.data.validation_prefix={tmp_path / 'val'}",
        "--config.model.vocab_size=32",
        "--config.checkpoint.every_steps=4",
    ]


def test_elastic_resume_reads_every_example_once_per_epoch_and_final_stage_on_two(tmp_path):
    text = text_overrides(tmp_path)
    workdir = tmp_path / "work"
    first = run(
        workdir,
        2,
        text
        + [
            "--config.train.steps=7",
            "--config.final.average_last=2",
            "--config.final.splits=validation",
            "--config.final.beam=2",
        ],
        name="two",
    )
    report = json.load(open(workdir / "eval" / "validation.averaged.json"))
    assert report["sentences"] == 12 and len(open(workdir / "eval" / "validation.averaged.hyp").readlines()) == 12
    assert "final validation (averaged" in first.output(0) and "final validation" not in first.output(1)
    one = run(workdir, 1, text + ["--config.train.steps=20"], devices=2, name="one")  # 2 -> 1
    assert "elastic resume: the checkpoint was written by 2 process(es), this run has 1" in one.output(0)
    again = run(workdir, 2, text + ["--config.train.steps=30"], name="again")  # 1 -> 2
    assert "written by 1 process(es), this run has 2" in again.output(0)
    taken = {}
    for i in range(2):
        for batch in again.records("examples", i):
            for epoch, index in batch:
                taken.setdefault(epoch, []).append(index)
    finished = sorted(taken)[:-1]  # the newest epoch may be incomplete
    assert len(finished) >= 2  # epochs spanning the 2 -> 1 and 1 -> 2 changes are among them
    for epoch in finished:
        assert sorted(taken[epoch]) == list(range(240)), f"epoch {epoch}: examples read twice or skipped"


def test_object_store_workdir_stays_a_url_end_to_end(tmp_path):
    """gs://bucket/run on a fake object store (tests/fake_gcs.py: gs://b/k is <root>/b/k): every artifact of a
    two-process run with its final stage lands in the bucket, a one-process resume reads it back, and no
    local "gs:" folder appears (what pathlib.Path("gs://b/run") would create)."""
    root = tmp_path / "bucket_root"
    fake = {"T2T_FAKE_GCS": str(root), "T2T_CACHE_DIR": str(tmp_path / "cache")}  # tokenized shards: local
    text = text_overrides(tmp_path, lines=60) + ["--config.train.tensorboard=True", "--config.train.eval_every=4"]
    for processes, steps in ((2, 8), (1, 12)):
        cluster = Cluster(
            "gs://bucket/run",
            processes,
            text
            + [f"--config.train.steps={steps}", "--config.final.average_last=2", "--config.final.splits=validation"],
            name=f"gcs{processes}",
            logs=str(tmp_path),
            env=fake,
        )
        assert cluster.wait() == [0] * processes, cluster.output(0)
    assert "resumed from the checkpoint at step 8 (gs://bucket/run/checkpoints)" in cluster.output(0)
    run_dir = root / "bucket" / "run"
    for name in (
        "config.json",
        "spm.model",
        "history.jsonl",
        "summary.json",
        "curves.png",
        "final.json",
        "checkpoints/12",
        "best",
        "averaged/12",
        "averaged/spm.model",
        "eval/validation.averaged.json",
    ):
        assert (run_dir / name).exists(), name
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*"))
    assert not [p for p in (ROOT, tmp_path, os.getcwd()) if os.path.exists(os.path.join(p, "gs:"))]
