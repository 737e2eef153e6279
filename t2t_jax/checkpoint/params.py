"""Params-only access to a workdir: ``latest``, ``best``, ``averaged`` or a step number.

The evaluate / translate / export commands need params and the config, never the
optimizer state; averaged checkpoints (params only) live in ``<workdir>/averaged``.
"""

from __future__ import annotations

import contextlib
import json

import jax
import numpy as np
import orbax.checkpoint as ocp

from t2t_jax.checkpoint.manager import BEST_DIR, LATEST_DIR
from t2t_jax.errors import ConfigError
from t2t_jax.workdir import Workdir, workdir_path

AVERAGED_DIR = "averaged"


def alone_options(**options) -> ocp.CheckpointManagerOptions:
    """Options of a manager that this process uses by itself (no barrier with the other processes of a
    multi-process run): reading params for inference, or the final stage's averaging on process 0."""
    if jax.process_count() > 1:
        index = jax.process_index()
        options["multiprocessing_options"] = ocp.options.MultiprocessingOptions(
            primary_host=index, active_processes={index}
        )
        options["create"] = False  # not supported with active_processes: callers create the directory
    return ocp.CheckpointManagerOptions(**options)


@contextlib.contextmanager
def _without_read_only_warnings():
    """orbax logs three warnings on every read-only open ("read_only=True, setting ..."): expected here, and
    noise in a notebook that loads a Translator (absl verbosity: lower is quieter)."""
    from absl import logging as absl_logging

    before = absl_logging.get_verbosity()
    absl_logging.set_verbosity(min(before, absl_logging.ERROR))
    try:
        yield
    finally:
        absl_logging.set_verbosity(before)


def restore_params_tree(directory, step=None):
    """(step, params as numpy arrays): read by this process alone, whatever devices wrote them."""
    directory = workdir_path(directory)
    with _without_read_only_warnings():
        manager = ocp.CheckpointManager(directory, options=alone_options(read_only=True))
    steps = manager.all_steps()
    if not steps:
        raise ConfigError(f"no checkpoint in {directory}")
    step = steps[-1] if step is None else int(step)
    if step not in steps:
        raise ConfigError(f"no checkpoint at step {step} in {directory}; steps: {sorted(steps)}")
    item = "params" if (directory / str(step) / "params").exists() else "state"
    metadata = ocp.StandardCheckpointHandler().metadata(directory / str(step) / item)
    target = jax.tree_util.tree_map(lambda leaf: np.zeros(leaf.shape, leaf.dtype), metadata)  # numpy restores numpy
    restored = manager.restore(step, args=ocp.args.Composite(**{item: ocp.args.StandardRestore(target)}))
    tree = restored[item]
    return step, (tree["params"] if item == "state" else tree)


def load_params(workdir, which: str = "latest"):
    """(step, params as host arrays) of the chosen checkpoint in ``workdir``."""
    workdir = workdir_path(workdir)
    if which in ("latest", "best", "averaged"):
        directory = {"latest": LATEST_DIR, "best": BEST_DIR, "averaged": AVERAGED_DIR}[which]
        return restore_params_tree(workdir / directory)
    if not which.isdigit():
        raise ConfigError(f"--checkpoint {which!r}: use latest, best, averaged or a step number")
    return restore_params_tree(workdir / LATEST_DIR, int(which))


def save_params(out_dir, step: int, params, config_dict: dict, workdir=None) -> None:
    """A params-only checkpoint at ``out_dir/<step>`` (plus config.json / spm.model for the commands).

    ``out_dir`` holds exactly one checkpoint: older ones are deleted first (readers take the newest step,
    so re-averaging an earlier range into the same directory must not leave a later one behind)."""
    out_dir = workdir_path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)  # orbax cannot create it for a manager of one process
    manager = ocp.CheckpointManager(out_dir, options=alone_options())
    for old in manager.all_steps():
        manager.delete(old)
    manager.save(step, args=ocp.args.Composite(params=ocp.args.StandardSave(params)), force=True)
    manager.wait_until_finished()
    manager.close()
    (out_dir / Workdir.CONFIG).write_text(json.dumps(config_dict, indent=2))
    if workdir is not None and Workdir(workdir).vocabulary.exists():
        Workdir(workdir).vocabulary.copy(out_dir / Workdir.VOCABULARY, overwrite=True)
