"""One process of the two-process test (tests/test_parallel.py): trains 3 steps on its own rows.

Usage: XLA_FLAGS=--xla_force_host_platform_device_count=4 python tests/multihost_worker.py PORT PROCESS_ID OUT.npz
"""
import os
import sys

import numpy as np  # noqa: E402
from flax.traverse_util import flatten_dict  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from t2t_jax.config import load_config  # noqa: E402
from t2t_jax.train.loop import train  # noqa: E402
from t2t_jax.train.parallel import host_tree  # noqa: E402

PARALLEL_TEST_OVERRIDES = ["--config.model.dropout=0.1", "--config.data.batch_tokens=512", "--config.train.steps=3",
                           "--config.train.eval_every=3", "--config.train.log_every=1", "--config.train.eval_batches=1"]


def main():
    port, process_id, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    config = load_config("experiments/smoke.py", PARALLEL_TEST_OVERRIDES + [
        f"--config.parallel.coordinator_address=127.0.0.1:{port}", "--config.parallel.num_processes=2",
        f"--config.parallel.process_id={process_id}"])
    summary = train(config, os.path.join(os.path.dirname(out), "work"))  # one shared workdir, as on a cluster
    flat = flatten_dict(host_tree(summary["state"].params), sep="/")
    np.savez(out, **flat, __loss__=summary["history"][-2]["loss"])


if __name__ == "__main__":
    main()
