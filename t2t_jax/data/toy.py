"""Generated sequence tasks (copy, reverse) for smoke runs and learning tests.

Ids follow docs/design.md: 0 pad, 1 eos, 2 unk; symbols are 3..vocab-1.  Batch i is a
pure function of (seed, i), so iteration is reproducible and resumable.
"""

from __future__ import annotations

import numpy as np

TASKS = ("copy", "reverse")
FIRST_SYMBOL = 3


def toy_batch(
    task: str,
    index: int,
    *,
    seed: int,
    batch_size: int,
    length: int,
    vocab: int,
    min_len: int,
    max_len: int,
    eos_id: int = 1,
) -> dict:
    """One padded batch {inputs, targets} of shape [batch_size, length] (EOS included in both)."""
    if task not in TASKS:
        raise ValueError(f"unknown toy task {task!r}; known: {TASKS}")
    if not 1 <= min_len <= max_len < length:
        raise ValueError(f"need 1 <= toy_min_length <= toy_max_length < max_length, got {min_len}, {max_len}, {length}")
    rng = np.random.default_rng([seed, index])
    inputs = np.zeros((batch_size, length), np.int32)
    targets = np.zeros((batch_size, length), np.int32)
    lengths = rng.integers(min_len, max_len + 1, size=batch_size)
    for row, n in enumerate(lengths):
        symbols = rng.integers(FIRST_SYMBOL, vocab, size=n)
        inputs[row, :n], inputs[row, n] = symbols, eos_id
        targets[row, :n] = symbols[::-1] if task == "reverse" else symbols
        targets[row, n] = eos_id
    return {"inputs": inputs, "targets": targets}


class ToyBatches:
    """This process's rows of global batch i (every process generates the same global batch); the state is
    the position i, the same on every process, so any process count resumes it."""

    def __init__(
        self, task, *, seed, batch_size, length, vocab, min_len, max_len, start=0, process_index=0, process_count=1
    ):
        if batch_size % process_count:
            raise ValueError(f"a global batch of {batch_size} rows cannot be split over {process_count} processes")
        self.kwargs = dict(
            seed=seed, batch_size=batch_size, length=length, vocab=vocab, min_len=min_len, max_len=max_len
        )
        self.task = task
        self.position = start
        share = batch_size // process_count
        self.process_count = process_count
        self.rows = slice(process_index * share, (process_index + 1) * share)

    def __iter__(self):
        return self

    def __next__(self):
        batch = toy_batch(self.task, self.position, **self.kwargs)
        self.position += 1
        return {k: v[self.rows] for k, v in batch.items()}

    def get_state(self) -> dict:
        return {"position": self.position}

    def set_state(self, state: dict) -> None:
        self.position = int(state["position"])

    def remap(self, states: list[dict]) -> list[dict]:
        """Global batches do not depend on the process count: every new process continues at the position."""
        return [states[0]] * self.process_count
