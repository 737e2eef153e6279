"""Data-parallel launchers for the per-device train/eval steps of step.py.

Both run the *same* step function (explicit ``psum`` over the axis ``data``):

* ``mesh`` (default): ``jax.jit`` of ``jax.shard_map`` over ``Mesh(devices, ("data",))``;
  the state is replicated by ``NamedSharding(mesh, P())`` and the batch is sharded on its
  leading axis.  ``check_vma=False`` gives pmap semantics: gradients of replicated params
  are *not* implicitly summed, so the explicit psum is right (with the default
  ``check_vma=True`` they would be summed twice).
* ``pmap``: ``jax.pmap(axis_name="data")`` over a state stacked once per local device.

Multi-host: every process passes only its own rows; global arrays are assembled with
``jax.make_array_from_process_local_data``.  Rows carry global example ids so dropout
masks do not depend on the device layout.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from t2t_jax.errors import ConfigError
from t2t_jax.train.step import eval_step, train_step

AXIS = "data"
LAUNCHERS = ("mesh", "pmap")


def with_example_ids(local_batch: dict) -> dict:
    """Add global row ids: process p's rows are p*rows .. (p+1)*rows-1 (equal shards per process)."""
    rows = local_batch["targets"].shape[0]
    start = jax.process_index() * rows
    return {**local_batch, "example_ids": np.arange(start, start + rows, dtype=np.int32)}


class MeshLauncher:
    """jit(shard_map(step)) over a 1-D data mesh of all (global) devices."""

    def __init__(self, model, tx, label_smoothing, accum_steps=1, devices=None, skip_nonfinite=False):
        devices = devices if devices is not None else jax.devices()
        self.mesh = Mesh(np.asarray(devices), (AXIS,))
        self.replicated = NamedSharding(self.mesh, P())
        self.restore_sharding = self.replicated  # checkpoints restore straight onto the mesh
        self.sharded = NamedSharding(self.mesh, P(AXIS))
        step = functools.partial(
            train_step,
            model=model,
            tx=tx,
            label_smoothing=label_smoothing,
            axis_name=AXIS,
            accum_steps=accum_steps,
            skip_nonfinite=skip_nonfinite,
        )
        evaluate = functools.partial(eval_step, model=model, label_smoothing=label_smoothing, axis_name=AXIS)
        self.train_step = jax.jit(self._shard(step, (P(), P(AXIS)), (P(), P())), donate_argnums=0)
        self.eval_step = jax.jit(self._shard(evaluate, (P(), P(AXIS)), P()))

    def _shard(self, fn, in_specs, out_specs):
        return jax.shard_map(fn, mesh=self.mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)

    @property
    def device_count(self):
        return self.mesh.size

    def put_state(self, state):
        """Replicate a host/single-device state (or re-place a restored one) on the mesh."""
        return jax.device_put(state, self.replicated)

    def get_state(self, state):
        return state

    def put_batch(self, local_batch: dict) -> dict:
        local_batch = with_example_ids(local_batch) if "example_ids" not in local_batch else local_batch
        _check_divisible(local_batch, jax.local_device_count())
        return {k: jax.make_array_from_process_local_data(self.sharded, np.asarray(v)) for k, v in local_batch.items()}


class PmapLauncher:
    """pmap(step) with the state stacked once per local device; collectives span every process's devices.

    ``devices=None`` (the default, and the only choice when multi-process) lets pmap use all global
    devices: each process feeds its local ones and ``psum`` reduces over all of them.  Listing only
    ``jax.local_devices()`` would build one ring per host and silently train N different models."""

    def __init__(self, model, tx, label_smoothing, accum_steps=1, devices=None, skip_nonfinite=False):
        if devices is not None and jax.process_count() > 1:
            raise ConfigError("the pmap launcher takes all global devices in a multi-process run (devices=None)")
        self.devices = devices
        self.local_count = len(devices) if devices is not None else jax.local_device_count()
        global_devices = devices if devices is not None else jax.devices()
        # Checkpoints are written and restored as arrays replicated over every device of every process.
        self.replicated = NamedSharding(Mesh(np.asarray(global_devices), (AXIS,)), P())
        self.restore_sharding = self.replicated
        step = functools.partial(
            train_step,
            model=model,
            tx=tx,
            label_smoothing=label_smoothing,
            axis_name=AXIS,
            accum_steps=accum_steps,
            skip_nonfinite=skip_nonfinite,
        )
        evaluate = functools.partial(eval_step, model=model, label_smoothing=label_smoothing, axis_name=AXIS)
        self._train = jax.pmap(step, axis_name=AXIS, donate_argnums=0, devices=devices)
        self._eval = jax.pmap(evaluate, axis_name=AXIS, devices=devices)

    @property
    def device_count(self):
        return self.replicated.mesh.size

    def put_state(self, state):
        """Stack a host state, or this process's copy of a restored replicated one, once per local device."""
        n = self.local_count
        return jax.tree_util.tree_map(lambda x: np.broadcast_to(x, (n,) + np.shape(x)), host_tree(state))

    def get_state(self, state):
        """The stacked replicas as one global array replicated over all devices (what orbax saves in a
        multi-process run; no host copy: the per-device buffers are reused)."""

        def unstack(x):
            if not isinstance(x, jax.Array):  # put_state's host arrays, before the first step
                return x[0]
            shards = {shard.device: shard.data for shard in x.addressable_shards}
            buffers = [shards[d].reshape(x.shape[1:]) for d in self.replicated.addressable_devices]
            return jax.make_array_from_single_device_arrays(x.shape[1:], self.replicated, buffers)

        return jax.tree_util.tree_map(unstack, state)

    def put_batch(self, local_batch: dict) -> dict:
        local_batch = with_example_ids(local_batch) if "example_ids" not in local_batch else local_batch
        n = self.local_count
        _check_divisible(local_batch, n)
        return {k: np.asarray(v).reshape((n, -1) + np.shape(v)[1:]) for k, v in local_batch.items()}

    def train_step(self, state, batch):
        """The stacked state and the (already global) metrics of this process's first device."""
        state, sums = self._train(state, batch)
        return state, _first_replica(sums)

    def eval_step(self, params, batch):
        return _first_replica(self._eval(params, batch))


def _first_replica(tree):
    """This process's first device's value of pmap outputs (identical on every device after the psum)."""
    return jax.tree_util.tree_map(lambda x: x.addressable_data(0)[0], tree)


def _check_divisible(batch, devices):
    rows = batch["targets"].shape[0]
    if rows % devices:
        raise ConfigError(
            f"a batch of {rows} rows per process cannot be split over {devices} local devices; "
            f"make data.batch_tokens / data.max_length a multiple of {devices}"
        )


def make_launcher(kind: str, model, tx, label_smoothing, accum_steps=1, devices=None, skip_nonfinite=False):
    if kind not in LAUNCHERS:
        raise ConfigError(f"parallel.launcher = {kind!r}: must be one of {list(LAUNCHERS)}")
    cls = MeshLauncher if kind == "mesh" else PmapLauncher
    return cls(model, tx, label_smoothing, accum_steps=accum_steps, devices=devices, skip_nonfinite=skip_nonfinite)


def host_tree(tree):
    """Fetch a replicated pytree to host numpy arrays (this process's copy when multi-host)."""

    def fetch(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            x = x.addressable_data(0)
        return np.asarray(jax.device_get(x))

    return jax.tree_util.tree_map(fetch, tree)
