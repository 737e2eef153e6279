"""Pack tokenized examples into fixed-shape rows: several examples per row with segment ids.

Row layout (docs/design.md, "Data"): ``*_segmentation`` is 1..n per example and 0 on
padding; ``*_position`` restarts at 0 for each example. The model shifts targets
right per segment, so no segment sees the previous one's EOS.
"""

from __future__ import annotations

import numpy as np

FIELDS = ("inputs", "targets")


def empty_batch(rows: int, length: int) -> dict:
    batch = {}
    for field in FIELDS:
        batch[field] = np.zeros((rows, length), np.int32)
        batch[f"{field}_segmentation"] = np.zeros((rows, length), np.int32)
        batch[f"{field}_position"] = np.zeros((rows, length), np.int32)
    return batch


class RowPacker:
    """Greedy first-fit into the current row; a new row when either side would overflow."""

    def __init__(self, rows: int, length: int):
        self.rows, self.length = rows, length
        self.batch = empty_batch(rows, length)
        self.row = 0
        self.fill = {field: 0 for field in FIELDS}
        self.segment = 0

    def add(self, source: np.ndarray, target: np.ndarray) -> bool:
        """Place one example; False (nothing placed) when the batch is full."""
        if len(source) > self.length or len(target) > self.length:
            raise ValueError(f"example longer than the row length {self.length}; filter it first")
        if self.fill["inputs"] + len(source) > self.length or self.fill["targets"] + len(target) > self.length:
            self.row += 1
            self.fill = {field: 0 for field in FIELDS}
            self.segment = 0
        if self.row >= self.rows:
            return False
        self.segment += 1
        for field, ids in zip(FIELDS, (source, target)):
            start, end = self.fill[field], self.fill[field] + len(ids)
            self.batch[field][self.row, start:end] = ids
            self.batch[f"{field}_segmentation"][self.row, start:end] = self.segment
            self.batch[f"{field}_position"][self.row, start:end] = np.arange(len(ids))
            self.fill[field] = end
        return True
