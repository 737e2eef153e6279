"""Multi-host start-up: ``jax.distributed.initialize`` from config or environment.

Environment (what launch scripts usually set): JAX_COORDINATOR_ADDRESS (host:port),
JAX_NUM_PROCESSES, JAX_PROCESS_ID.  On TPU pods and SLURM/Open MPI clusters set
``parallel.auto_detect=True`` and JAX finds all three itself.  On CPU the
cross-process collectives go through gloo.
"""

from __future__ import annotations

import json
import os

import jax
import numpy as np


def initialize(parallel_config) -> bool:
    """Join the process group if one is configured; returns True when multi-process."""
    address = parallel_config.coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS", "")
    processes = int(os.environ.get("JAX_NUM_PROCESSES", parallel_config.num_processes))
    process_id = int(os.environ.get("JAX_PROCESS_ID", parallel_config.process_id))
    if parallel_config.auto_detect:
        jax.distributed.initialize(heartbeat_timeout_seconds=parallel_config.heartbeat_seconds)
        return jax.process_count() > 1
    if not address or processes <= 1:
        return False
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=address,
        num_processes=processes,
        process_id=process_id,
        heartbeat_timeout_seconds=parallel_config.heartbeat_seconds,
    )
    return True


def single_process() -> bool:
    return jax.process_count() == 1


def process_rows(global_batch: dict) -> dict:
    """This process's equal share of a batch every process generated identically (toy data)."""
    count, index = jax.process_count(), jax.process_index()
    rows = global_batch["targets"].shape[0]
    if rows % count:
        raise ValueError(f"a global batch of {rows} rows cannot be split over {count} processes")
    share = rows // count
    return {k: np.asarray(v)[index * share : (index + 1) * share] for k, v in global_batch.items()}


def allgather_rows(row: np.ndarray) -> np.ndarray:
    """[processes, *row.shape]: every process's ``row``, on every process (one small collective)."""
    if single_process():
        return np.asarray(row)[None]
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(np.asarray(row)))


def allgather_json(value) -> list:
    """Every process's JSON-able ``value``, in process order, on every process (two small collectives)."""
    if single_process():
        return [value]
    data = np.frombuffer(json.dumps(value).encode(), np.uint8)
    sizes = allgather_rows(np.asarray([data.size], np.int32))[:, 0]
    padded = np.zeros(int(sizes.max()), np.uint8)
    padded[: data.size] = data
    rows = allgather_rows(padded)
    return [json.loads(bytes(rows[p, : sizes[p]]).decode()) for p in range(len(sizes))]


def barrier(name: str, timeout_seconds: float) -> None:
    """All processes wait here for each other (the coordination service's barrier; no device collective)."""
    if single_process():
        return
    import orbax.checkpoint as ocp

    ocp.multihost.sync_global_processes(name, timeout=int(timeout_seconds))
