"""Checkpoint averaging (§6.1: last 5 for base, last 20 for big), params only, in float32."""

from __future__ import annotations

import json

import jax
import numpy as np
import orbax.checkpoint as ocp

from t2t_jax.checkpoint.manager import LATEST_DIR
from t2t_jax.checkpoint.params import alone_options, restore_params_tree, save_params
from t2t_jax.errors import ConfigError
from t2t_jax.progress import Meter
from t2t_jax.workdir import Workdir, workdir_path


def saved_steps(workdir) -> list[int]:
    """The steps of the checkpoints kept in ``workdir``, oldest first."""
    directory = workdir_path(workdir) / LATEST_DIR
    if not directory.exists():
        return []
    manager = ocp.CheckpointManager(directory, options=alone_options(read_only=True))
    return sorted(manager.all_steps())


def average_last(workdir, last: int, out_dir, log=None, until: int | None = None) -> list[int]:
    """Average the params of the last ``last`` checkpoints of ``workdir`` (those at or before step ``until``
    when given: what a shorter run would have averaged) into ``out_dir``; returns the steps. Progress goes to
    ``log`` (a print-like function), or with None to stderr (a live bar on a terminal)."""
    if last < 1:
        raise ConfigError(f"--last {last}: average at least 1 checkpoint")
    check_average_out(out_dir, workdir)
    directory = workdir_path(workdir) / LATEST_DIR
    steps = [s for s in saved_steps(workdir) if until is None or s <= until]
    if len(steps) < last:
        where = f" at or before step {until}" if until is not None else ""
        raise ConfigError(f"--last {last}: only {len(steps)} checkpoint(s){where} in {directory} (steps {steps})")
    chosen = steps[-last:]
    total = None
    meter = Meter(f"average steps {chosen[0]}..{chosen[-1]}", len(chosen), unit="checkpoints", printer=log)
    for done, step in enumerate(chosen, 1):
        _, params = restore_params_tree(directory, step)
        params = jax.tree_util.tree_map(lambda x: np.asarray(x, np.float32), params)
        total = params if total is None else jax.tree_util.tree_map(np.add, total, params)
        meter(done)
    average = jax.tree_util.tree_map(lambda x: x / np.float32(len(chosen)), total)
    config = json.loads(Workdir(workdir).config.read_text())
    save_params(out_dir, chosen[-1], average, {**config, "_averaged_steps": chosen}, workdir=workdir)
    return chosen


def check_average_out(out_dir, workdir) -> None:
    """``out_dir`` may be new, empty or a previous average (its config has ``_averaged_steps``): never the
    workdir, a folder holding it, its checkpoint slots, or a foreign folder (writing there replaces its
    config.json and deletes its checkpoint steps)."""
    out, files = workdir_path(out_dir), Workdir(workdir)
    root = files.root
    slots = (files.checkpoints, files.best)
    if out == root or out in root.parents or any(out == slot or slot in out.parents for slot in slots):
        raise ConfigError(
            f"--out {out} is the workdir, holds it, or is one of its checkpoint folders; the default is "
            f"{files.averaged}"
        )
    if out.is_dir() and any(out.iterdir()):
        config = out / Workdir.CONFIG
        if not (config.exists() and "_averaged_steps" in json.loads(config.read_text())):
            raise ConfigError(f"--out {out} is not empty and is not a previous average; give a new or empty folder")
