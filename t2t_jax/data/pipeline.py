"""Training and evaluation batches from tokenized pairs.

Training: the examples are the pairs of a tokenized split (data/records.py) that fit data.max_length, read
in blocks, never all held; every epoch is a seeded permutation of them; process p of N takes positions
p, p+N, ... of it (disjoint shards whose union is the data), and packs them into fixed-shape [rows, length]
batches, a few batches ahead in a thread (``PrefetchedBatches``). The iterator state is
(epoch, cursor into this process's order) at a batch boundary, so a restored
iterator yields exactly the batches that would have come next; a checkpoint of N
processes restored on M is remapped so the epoch continues (data/epochs.py).

Evaluation: unpacked, sorted by length into a few bucket lengths (fixed shapes,
few compilations), never dropping a sentence; rows padded to a multiple of the
device count with empty rows that weigh nothing.
"""

from __future__ import annotations

import atexit
import weakref

import numpy as np

from t2t_jax.data import epochs
from t2t_jax.data.packing import RowPacker


class InMemoryExamples:
    """Pairs held in lists (tests, small corpora); the same ``read`` interface as ``TokenizedExamples``."""

    def __init__(self, sources, targets):
        self.sources, self.targets = sources, targets

    def __len__(self) -> int:
        return len(self.sources)

    def read(self, indices):
        return [(self.sources[i], self.targets[i]) for i in indices]


class TokenizedExamples:
    """The pairs of a tokenized split (data/records.py) that pass the length filter: example i is record keep[i]."""

    def __init__(self, split, keep: np.ndarray):
        self.split, self.keep = split, keep

    def __len__(self) -> int:
        return len(self.keep)

    def read(self, indices):
        return self.split.read(self.keep[np.asarray(indices, np.int64)])


class PackedTrainBatches:
    """This process's packed training batches; state {epoch, cursor, plans} (see data/epochs.py).

    ``examples`` is random access (``len``, ``read(indices)``); pairs are read in blocks of ``read_block``
    positions of this process's order, a cache that does not enter the state.
    """

    def __init__(
        self,
        examples,
        *,
        rows: int,
        length: int,
        seed: int,
        process_index: int = 0,
        process_count: int = 1,
        read_block: int = 4096,
    ):
        if not len(examples):
            raise ValueError("no training examples left after length filtering")
        self.examples = examples
        self.rows, self.length, self.seed, self.read_block = rows, length, seed, read_block
        self.process_index, self.process_count = process_index, process_count
        self.epoch, self.cursor = 0, 0
        self.plans: dict = {}  # epoch (as a string, for JSON) -> the compact list left after an elastic resume
        self.taken: list = []  # (epoch, example index) of every example in the last batch
        self._order_cache = (None, None)
        self._block = (None, 0, [])  # (epoch, first cursor, pairs) read ahead

    def order(self, epoch: int) -> np.ndarray:
        """This process's example indices for ``epoch`` (int32: 4 bytes per example of the corpus)."""
        if self._order_cache[0] != epoch:
            total = len(self.examples)
            permutation = np.random.default_rng([self.seed, epoch]).permutation(np.arange(total, dtype=np.int32))
            positions = epochs.share(self.plans.get(str(epoch)), total, self.process_index, self.process_count)
            self._order_cache = (epoch, permutation[positions])
        return self._order_cache[1]

    def _pair(self, epoch: int, cursor: int):
        block_epoch, first, pairs = self._block
        if block_epoch != epoch or not first <= cursor < first + len(pairs):
            first, pairs = cursor, self.examples.read(self.order(epoch)[cursor : cursor + self.read_block])
            self._block = (epoch, first, pairs)
        return pairs[cursor - first]

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
            if not packer.add(*self._pair(epoch, cursor)):
                break
            taken.append((epoch, int(order[cursor])))
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
        self._block = (None, 0, [])

    def remap(self, states: list[dict]) -> list[dict]:
        """States saved by ``len(states)`` processes -> one per process of this run (elastic resume)."""
        return epochs.remap(states, len(self.examples), self.process_count)


class _WithTaken:
    """Adapter for grain's prefetch: each element carries the examples it packs."""

    def __init__(self, batches: PackedTrainBatches):
        self.batches = batches

    def __next__(self):
        batch = next(self.batches)
        return batch, self.batches.taken

    def get_state(self):
        return self.batches.get_state()

    def set_state(self, state):
        self.batches.set_state(state)


class PrefetchedBatches:
    """``PackedTrainBatches`` packed ``buffer`` batches ahead in a thread (grain's ThreadPrefetchDatasetIterator,
    which pairs every element with the iterator state after it, so ``get_state`` is the consumer's position)."""

    def __init__(self, batches: PackedTrainBatches, buffer: int = 2):
        from grain.experimental import ThreadPrefetchDatasetIterator

        self.batches = batches
        self.iterator = ThreadPrefetchDatasetIterator(_WithTaken(batches), buffer)
        self.taken: list = []
        atexit.register(_close_if_alive, weakref.ref(self))  # before interpreter teardown breaks grain's __del__

    def __iter__(self):
        return self

    def __next__(self) -> dict:
        batch, self.taken = next(self.iterator)
        return batch

    def get_state(self) -> dict:
        return self.iterator.get_state()

    def set_state(self, state: dict) -> None:
        self.iterator.set_state(state)

    def remap(self, states: list[dict]) -> list[dict]:
        return self.batches.remap(states)

    def close(self) -> None:
        """Stop the thread; the grain iterator is dropped now, while the interpreter can still collect it."""
        if self.iterator is not None:
            self.iterator.close()
            self.iterator = None


def _close_if_alive(reference) -> None:
    batches = reference()
    if batches is not None:
        batches.close()


def bucket_length(n: int, max_length: int, minimum: int = 8) -> int:
    """Smallest power of two >= n (at least ``minimum``), capped at max_length."""
    length = minimum
    while length < n:
        length *= 2
    return min(length, max_length)


def eval_batches(sources, targets, *, tokens_per_batch: int, max_length: int, row_multiple: int = 1):
    """Length-bucketed, unpacked batches covering every example once (batch_plan's shapes), plus each batch's
    example indices."""
    lengths = [max(len(s), len(t)) for s, t in zip(sources, targets)]
    order = np.argsort(lengths, kind="stable")
    plan = batch_plan([lengths[i] for i in order], tokens_per_batch, max_length, row_multiple=row_multiple)
    batches = []
    for start, count, rows, length in plan:
        chosen = order[start : start + count]
        batch = {
            "inputs": pad_batch([sources[i][:length] for i in chosen], rows, length, 0),
            "targets": pad_batch([targets[i][:length] for i in chosen], rows, length, 0),
        }
        batches.append((batch, np.asarray(chosen)))
    return batches


def batch_plan(lengths, tokens_per_batch: int, max_len: int, *, fit_rows: bool = False, row_multiple: int = 1):
    """(start, count, rows, length) of each batch over ``lengths`` sorted ascending: batches of the shapes
    [tokens_per_batch // length, length], length a power-of-two bucket, each taking the longest run of
    sentences that fits one such shape. A bucket's last few sentences thus join the next bucket's batch
    (in its shape) rather than decoding alone in a batch of padding rows: padding rows compute every step.
    ``fit_rows``: a batch of fewer sentences takes the smallest power-of-two rows that hold them (a server's
    one sentence decodes in 1 row, not 32), at the cost of more shapes to compile. ``row_multiple``: full shapes
    have a multiple of it rows (one share per device). The one bucketing rule of translation, scoring and the
    dev loss."""

    def rows(length: int) -> int:
        return max(tokens_per_batch // bucket_length(length, max_len) // row_multiple, 1) * row_multiple

    plan, start = [], 0
    while start < len(lengths):
        count = 1
        while start + count < len(lengths) and count + 1 <= rows(lengths[start + count]):
            count += 1
        longest = lengths[start + count - 1]
        shape_rows = fitted_rows(count, rows(longest)) if fit_rows else rows(longest)
        plan.append((start, count, shape_rows, bucket_length(longest, max_len)))
        start += count
    return plan


def fitted_rows(count: int, rows: int) -> int:
    """The rows of a batch of ``count`` sentences in a shape of ``rows``: the smallest power of two holding them."""
    return min(rows, 1 << (count - 1).bit_length())


def pad_batch(sequences, rows: int, length: int, pad_id: int) -> np.ndarray:
    """[rows, length] int32 ids: ``sequences`` (each at most ``length`` long) in the first rows, pad after."""
    batch = np.full((rows, length), pad_id, np.int32)
    for row, ids in enumerate(sequences):
        batch[row, : len(ids)] = ids
    return batch
