"""Multi-host start-up: ``jax.distributed.initialize`` from config or environment.

Environment (what launch scripts usually set): JAX_COORDINATOR_ADDRESS (host:port),
JAX_NUM_PROCESSES, JAX_PROCESS_ID.  On TPU pods and SLURM/Open MPI clusters set
``parallel.auto_detect=True`` and JAX finds all three itself.  On CPU the
cross-process collectives go through gloo.
"""
from __future__ import annotations

import os

import jax
import numpy as np


def initialize(parallel_config) -> bool:
    """Join the process group if one is configured; returns True when multi-process."""
    address = parallel_config.coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS", "")
    processes = int(os.environ.get("JAX_NUM_PROCESSES", parallel_config.num_processes))
    process_id = int(os.environ.get("JAX_PROCESS_ID", parallel_config.process_id))
    if parallel_config.auto_detect:
        jax.distributed.initialize()
        return jax.process_count() > 1
    if not address or processes <= 1:
        return False
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=address, num_processes=processes, process_id=process_id)
    return True


def process_rows(global_batch: dict) -> dict:
    """This process's equal share of a batch every process generated identically (toy data)."""
    count, index = jax.process_count(), jax.process_index()
    rows = global_batch["targets"].shape[0]
    if rows % count:
        raise ValueError(f"a global batch of {rows} rows cannot be split over {count} processes")
    share = rows // count
    return {k: np.asarray(v)[index * share:(index + 1) * share] for k, v in global_batch.items()}


def agree(flag: bool) -> bool:
    """Process 0's flag on every process (a wall-clock decision must stop all hosts at one step)."""
    if jax.process_count() == 1:
        return bool(flag)
    from jax.experimental import multihost_utils

    return bool(multihost_utils.broadcast_one_to_all(np.asarray(flag, np.int32)))
