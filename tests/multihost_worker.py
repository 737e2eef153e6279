"""One process of a multi-process test: the real ``t2t-train`` command, plus records for the assertions.

Usage: XLA_FLAGS=--xla_force_host_platform_device_count=K \
    python tests/multihost_worker.py PORT PROCESS_ID PROCESSES WORKDIR [--config.a.b=v ...]

PROCESSES = 1 runs without a process group.  T2T_TEST_STEP_SECONDS=S makes every batch take at least S seconds, so
that a test of timed behaviour has a lower bound on elapsed time whatever the machine's speed.  With
T2T_FAKE_GCS=ROOT set, gs:// is a local fake rooted at ROOT
(tests/fake_gcs.py).  Records, per process, in WORKDIR/records/:
  p<i>.examples.jsonl  one line per training batch: the (epoch, example index) pairs packed into it
  p<i>.saves.jsonl     the step of every checkpoint save this process entered
  p<i>.cooldown.jsonl  [start, end] of a cooldown this process started by the time budget (train/cooldown.py)
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from t2t_jax.checkpoint import manager  # noqa: E402
from t2t_jax.cli import train as train_cli  # noqa: E402
from t2t_jax.data import pipeline  # noqa: E402
from t2t_jax.train import cooldown  # noqa: E402


def record(path, value):
    with open(path, "a") as out:
        out.write(json.dumps(value) + "\n")


def main():
    port, process_id, processes, workdir, *overrides = sys.argv[1:]
    if os.environ.get("T2T_FAKE_GCS"):
        from fake_gcs import PREFIX, install

        install(os.environ["T2T_FAKE_GCS"])
        records_root = os.path.join(os.environ["T2T_FAKE_GCS"], workdir.removeprefix(PREFIX))
    else:
        records_root = workdir
    records = os.path.join(records_root, "records")
    os.makedirs(records, exist_ok=True)
    prefix = os.path.join(records, f"p{process_id}")

    next_batch, save = pipeline.PrefetchedBatches.__next__, manager.Checkpointer.save

    step_seconds = float(os.environ.get("T2T_TEST_STEP_SECONDS", "0"))

    def recording_next(self):
        time.sleep(step_seconds)
        batch = next_batch(self)
        record(prefix + ".examples.jsonl", self.taken)
        return batch

    def recording_save(self, step, *args, **kwargs):
        record(prefix + ".saves.jsonl", step)
        return save(self, step, *args, **kwargs)

    started_at = cooldown.CooldownPlan.started_at

    def recording_started_at(step, fraction, total_steps):
        plan = started_at(step, fraction, total_steps)
        record(prefix + ".cooldown.jsonl", plan and plan.to_json())
        return plan

    cooldown.CooldownPlan.started_at = staticmethod(recording_started_at)
    pipeline.PrefetchedBatches.__next__ = recording_next
    manager.Checkpointer.save = recording_save
    group = (
        []
        if processes == "1"
        else [
            f"--config.parallel.coordinator_address=127.0.0.1:{port}",
            f"--config.parallel.num_processes={processes}",
            f"--config.parallel.process_id={process_id}",
        ]
    )
    train_cli.main(["--config", "smoke", "--workdir", workdir, *group, *overrides])


if __name__ == "__main__":
    main()
