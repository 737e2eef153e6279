"""Training and evaluation batches from tokenized pairs.

Training: every epoch is a seeded permutation of the examples; process p of N
takes positions p, p+N, ... of it (disjoint shards whose union is the data), and
packs them into fixed-shape [rows, length] batches. The iterator state is
(epoch, cursor into this process's order) at a batch boundary, so a restored
iterator yields exactly the batches that would have come next; a checkpoint of N
processes restored on M is remapped so the epoch continues (data/epochs.py).

Evaluation: unpacked, sorted by length into a few bucket lengths (fixed shapes,
few compilations), never dropping a sentence; rows padded to a multiple of the
device count with empty rows that weigh nothing.
"""
from __future__ import annotations

import numpy as np

from t2t_jax.data import epochs
from t2t_jax.data.packing import RowPacker


class PackedTrainBatches:
    """This process's packed training batches; state {epoch, cursor, plans} (see data/epochs.py)."""

    def __init__(self, sources, targets, *, rows: int, length: int, seed: int, process_index: int = 0,
                 process_count: int = 1):
        if not sources:
            raise ValueError("no training examples left after length filtering")
        self.sources, self.targets = sources, targets
        self.rows, self.length, self.seed = rows, length, seed
        self.process_index, self.process_count = process_index, process_count
        self.epoch, self.cursor = 0, 0
        self.plans: dict = {}  # epoch (as a string, for JSON) -> the compact list left after an elastic resume
        self.taken: list = []  # (epoch, example index) of every example in the last batch
        self._order_cache = (None, None)

    def order(self, epoch: int) -> np.ndarray:
        """This process's example indices for ``epoch``."""
        if self._order_cache[0] != epoch:
            permutation = np.random.default_rng([self.seed, epoch]).permutation(len(self.sources))
            positions = epochs.share(self.plans.get(str(epoch)), len(self.sources), self.process_index,
                                     self.process_count)
            self._order_cache = (epoch, permutation[positions])
        return self._order_cache[1]

    def __iter__(self):
        return self

    def __next__(self) -> dict:
        packer = RowPacker(self.rows, self.length)
        epoch, cursor, taken = self.epoch, self.cursor, []
        while True:
            order = self.order(epoch)
            if cursor >= len(order):
                epoch, cursor = epoch + 1, 0
                continue
            index = order[cursor]
            if not packer.add(self.sources[index], self.targets[index]):
                break
            taken.append((epoch, int(index)))
            cursor += 1
        self.epoch, self.cursor, self.taken = epoch, cursor, taken
        self.plans = {e: p for e, p in self.plans.items() if int(e) >= epoch}  # finished epochs' lists go
        return packer.batch

    def get_state(self) -> dict:
        return {"epoch": self.epoch, "cursor": self.cursor, "plans": self.plans}

    def set_state(self, state: dict) -> None:
        self.epoch, self.cursor = int(state["epoch"]), int(state["cursor"])
        self.plans = dict(state.get("plans") or {})
        self._order_cache = (None, None)

    def remap(self, states: list[dict]) -> list[dict]:
        """States saved by ``len(states)`` processes -> one per process of this run (elastic resume)."""
        return epochs.remap(states, len(self.sources), self.process_count)


def bucket_length(n: int, max_length: int, minimum: int = 8) -> int:
    """Smallest power of two >= n (at least ``minimum``), capped at max_length."""
    length = minimum
    while length < n:
        length *= 2
    return min(length, max_length)


def eval_batches(sources, targets, *, tokens_per_batch: int, max_length: int, row_multiple: int = 1):
    """Length-bucketed, unpacked batches covering every example once, plus each batch's example indices."""
    lengths = [max(len(s), len(t)) for s, t in zip(sources, targets)]
    order = np.argsort(lengths, kind="stable")
    batches, start = [], 0
    while start < len(order):
        length = bucket_length(lengths[order[start]], max_length)
        rows = max(tokens_per_batch // length // row_multiple, 1) * row_multiple
        chosen = [i for i in order[start:start + rows] if bucket_length(lengths[i], max_length) == length]
        batch = {"inputs": np.zeros((rows, length), np.int32), "targets": np.zeros((rows, length), np.int32)}
        for row, index in enumerate(chosen):
            for field, ids in (("inputs", sources[index][:length]), ("targets", targets[index][:length])):
                batch[field][row, :len(ids)] = ids
        batches.append((batch, np.asarray(chosen)))
        start += len(chosen)
    return batches
