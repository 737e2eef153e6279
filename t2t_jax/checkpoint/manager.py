"""Orbax checkpoints of a run: ``<workdir>/checkpoints`` keeps the last K, ``<workdir>/best`` one best-dev.

Each checkpoint holds the train state (params, optimizer state, step, RNG key),
the data iterator state and the resolved config. Orbax writes into a temporary
directory and renames it when complete, so a crash mid-save never leaves a
checkpoint that looks complete; a damaged latest checkpoint is skipped with a
warning in favour of the previous one.  Restoring goes against an abstract
target that carries the *current* sharding, so 8-device checkpoints load on 1.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

import jax
import orbax.checkpoint as ocp
from etils import epath

from t2t_jax.errors import CheckpointError, ConfigError
from t2t_jax.workdir import Workdir, workdir_path

LATEST_DIR, BEST_DIR = Workdir.CHECKPOINTS, Workdir.BEST


class _SiblingWriteFailures(logging.Filter):
    """Drops asyncio's "Task exception was never retrieved" for orbax's own write tasks.  When storage fails
    (a full disk), every concurrent fragment write fails; orbax re-raises the first, which ``_failing_loudly``
    reports as the one error, and asyncio logs each sibling with a traceback to stderr at garbage collection:
    the same failure again, dozens of times, around the error line."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.startswith("Task exception was never retrieved") and "orbax" in message)


_SIBLINGS = _SiblingWriteFailures()


def _manager(directory: epath.Path, keep: int, async_save: bool) -> ocp.CheckpointManager:
    options = ocp.CheckpointManagerOptions(max_to_keep=keep, create=True, enable_async_checkpointing=async_save)
    return ocp.CheckpointManager(directory, options=options)


def abstract_like(tree, sharding=None):
    """ShapeDtypeStructs of ``tree`` carrying ``sharding`` (default: each leaf's own)."""

    def leaf(x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding or getattr(x, "sharding", None))

    return jax.tree_util.tree_map(leaf, tree)


class Checkpointer:
    """The latest-K and best-dev managers of a workdir.  When to save is decided by the caller, identically
    on every process (train/control.py): orbax saves are collective."""

    def __init__(self, workdir, *, keep: int = 20, async_save: bool = True, log: Callable = print):
        self.workdir = workdir_path(workdir)
        self.latest = _manager(self.workdir / LATEST_DIR, keep, async_save)
        self.best = _manager(self.workdir / BEST_DIR, 1, async_save)
        self.best_metric: float | None = self._saved_best_metric()
        self.last_saved: int | None = self.latest.latest_step()  # for messages ("the last checkpoint")
        self.damaged: set[int] = set()  # steps found unreadable by restore_latest
        self.log = log
        logging.getLogger("asyncio").addFilter(_SIBLINGS)  # idempotent: a filter is added once

    def save(self, step: int, state, data_state: dict, config_dict: dict) -> None:
        if step in self.damaged:  # found unreadable at resume: this save replaces it
            self.latest.delete(step)
            self.damaged.discard(step)
        if step in self.latest.all_steps():
            return
        with self._failing_loudly(f"the checkpoint save at step {step}"):
            self.latest.save(step, args=_save_args(state, data_state, config_dict), force=True)
        self.last_saved = step

    @contextlib.contextmanager
    def _failing_loudly(self, what: str):
        """Async saves fail in a background thread; orbax re-raises at the next save or wait.  Turn that
        into one CheckpointError naming the failure and the checkpoint a rerun resumes from (latest slot)."""
        try:
            yield
        except Exception as error:  # noqa: BLE001 - whatever the storage layer raises means the same here
            finalized = self.latest.all_steps(read=True)  # from storage: the manager's own list has the failed step
            kept = max(finalized) if finalized else None
            raise CheckpointError(
                f"{what} (or the one before it, written in the background) failed: {type(error).__name__}: "
                f"{str(error).strip().splitlines()[0][:300] if str(error).strip() else ''}; the last complete "
                f"checkpoint to resume from is {'step ' + str(kept) if kept is not None else 'none'} in "
                f"{self.latest.directory}. "
                f"Check the workdir's free space and permissions, then rerun to resume"
            ) from None

    def is_better(self, metric: float) -> bool:
        """Whether ``metric`` (higher is better) beats the best slot's."""
        return self.best_metric is None or metric > self.best_metric

    def save_best(self, step: int, state, data_state, config_dict, metric: float) -> None:
        """Keep ``state`` in the best slot (never touches the latest K); the caller checked ``is_better``."""
        with self._failing_loudly(f"the best-slot save at step {step}"):
            self.best.wait_until_finished()
            for old in self.best.all_steps():
                self.best.delete(old)
            self.best.save(
                step, args=_save_args(state, data_state, {**config_dict, "_best_metric": metric}), force=True
            )
        self.best_metric = metric

    def _saved_best_metric(self):
        steps = self.best.all_steps()
        if not steps:
            return None
        restored = self.best.restore(steps[-1], args=ocp.args.Composite(config=ocp.args.JsonRestore()))
        return restored["config"].get("_best_metric")

    def restore_latest(self, abstract_state):
        """(step, state, data_state, config_dict) of the newest readable checkpoint; None for a workdir without
        checkpoints.  Unreadable newer ones are remembered, so the run's save at their step replaces them;
        a workdir whose checkpoints are *all* unreadable is a CheckpointError, never a silent restart."""
        steps = sorted(self.latest.all_steps(), reverse=True)
        for step in steps:
            try:
                return (step,) + restore(self.latest, step, abstract_state)
            except Exception as error:  # noqa: BLE001 - any unreadable checkpoint falls back the same way
                self.damaged.add(step)
                first = f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
                self.log(
                    f"warning: checkpoint at step {step} is unreadable ({first}); falling back to the previous one"
                )
        if steps:
            raise CheckpointError(
                f"every checkpoint in {self.latest.directory} is unreadable (steps "
                f"{sorted(steps)}; the newest: {first}); nothing was changed. To start over, "
                f"move {self.latest.directory} away or use a new workdir"
            )
        return None

    def wait(self) -> None:
        with self._failing_loudly("finishing the checkpoint saves"):
            self.latest.wait_until_finished()
        with self._failing_loudly("finishing the best-slot save"):
            self.best.wait_until_finished()

    def close(self) -> None:
        self.latest.close()
        self.best.close()


def _save_args(state, data_state, config_dict):
    return ocp.args.Composite(
        state=ocp.args.StandardSave(state), data=ocp.args.JsonSave(data_state), config=ocp.args.JsonSave(config_dict)
    )


def restore(manager: ocp.CheckpointManager, step: int, abstract_state):
    restored = manager.restore(
        step,
        args=ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract_state), data=ocp.args.JsonRestore(), config=ocp.args.JsonRestore()
        ),
    )
    return restored["state"], restored["data"], restored["config"]


def check_compatible(saved: dict, current: dict) -> None:
    """A workdir written by a different model config is an error listing the fields that differ."""
    from t2t_jax.model.config import ModelConfig

    defaults = ModelConfig().to_dict()  # options added since the save read as their defaults
    saved_model = {**defaults, **saved.get("model", {})}
    current_model = {**defaults, **current.get("model", {})}
    differing = sorted(
        k for k in set(saved_model) | set(current_model) if k != "dtype" and saved_model.get(k) != current_model.get(k)
    )
    if differing:
        details = ", ".join(
            f"model.{k}: saved {saved_model.get(k)!r} vs now {current_model.get(k)!r}" for k in differing
        )
        raise ConfigError(
            f"the workdir holds checkpoints of a different model ({details}); use a new workdir or the saved config"
        )
