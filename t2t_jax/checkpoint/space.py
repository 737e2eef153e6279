"""Refuse to start a run whose workdir cannot hold one checkpoint, instead of failing at the first save
after hours of training (orbax writes a step into a temporary folder first, so a save needs the whole
state's size free, however many older steps it later evicts)."""

from __future__ import annotations

import os
import shutil

import jax

from t2t_jax import distributed
from t2t_jax.errors import CheckpointError
from t2t_jax.workdir import is_url

MARGIN = 1.1  # metadata, the data-iterator state, filesystem blocks


def state_bytes(abstract_state) -> int:
    """Bytes of a train state's arrays (params, Adam moments, step, rng) from shapes alone."""
    return sum(int(x.size) * x.dtype.itemsize for x in jax.tree_util.tree_leaves(abstract_state))


def free_bytes(path) -> int | None:
    """Free bytes on the disk that holds ``path`` (its nearest existing folder); None for object stores."""
    if is_url(path):
        return None
    folder = os.path.abspath(os.fspath(path))
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    return shutil.disk_usage(folder).free


def check_checkpoint_space(workdir, abstract_state) -> None:
    """One CheckpointError on every process when any process's workdir disk lacks the room for one checkpoint
    (all processes decide together: one failing alone would leave the others waiting in a collective)."""
    need = int(state_bytes(abstract_state) * MARGIN)
    free = free_bytes(workdir)
    mine = None if free is None or free >= need else f"{free / 1e9:.2f} GB free on process {jax.process_index()}"
    short = [problem for problem in distributed.allgather_json(mine) if problem]
    if short:
        raise CheckpointError(
            f"--workdir {workdir}: {short[0]}, but one checkpoint of this model needs ~{need / 1e9:.2f} GB "
            f"(params and Adam moments in float32); free space there or choose another workdir"
        )
