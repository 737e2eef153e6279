"""Which examples process p of N reads in each epoch, and how that is remapped when N changes (elastic resume).

Epoch e is a seeded permutation ``perm_e`` of the E training examples.  Its *list* L_e is a sequence of
positions into ``perm_e``: normally all of them, ``range(E)``; after an elastic resume, the positions not yet
read, stored compactly as an explicit ``head`` followed by ``range(start, E)``.  Process p of N reads
``perm_e[L_e[p::N]]`` in order and keeps a cursor (how many of its share it has read).

Remap rule (``remap``): at a checkpoint, N processes are at (epoch e_p, cursor c_p).  For every epoch from
the oldest to the newest any process is in, the positions no process has read are collected, in list order,
into that epoch's new list; the M new processes start at the oldest epoch with anything left, cursor 0, and
share each new list as ``L[q::M]``; later epochs are whole permutations again.  So across the interruption
every example is read exactly once per epoch.  The explicit head holds only the ragged part (where the N
cursors disagree, plus the previous head), so it stays small: packing makes cursors drift apart slowly.
"""

from __future__ import annotations

import numpy as np


def epoch_list(plan: dict | None, total: int) -> np.ndarray:
    """L_e as positions into the epoch's permutation (``plan`` None: all of them)."""
    if plan is None:
        return np.arange(total)
    return np.concatenate([np.asarray(plan["head"], np.int64), np.arange(int(plan["start"]), total)])


def share(plan: dict | None, total: int, index: int, count: int) -> np.ndarray:
    """Process ``index`` of ``count``: its positions of L_e, in reading order."""
    if plan is None:
        return np.arange(index, total, count)  # without building L_e: this runs on every start
    return epoch_list(plan, total)[index::count]


def remap(states: list[dict], total: int, count: int) -> list[dict]:
    """States {epoch, cursor, plans} of N processes -> states for ``count`` processes (see the module doc)."""
    old_count = len(states)
    plans = {}
    for state in states:  # identical in every process; merged for safety
        plans.update(state.get("plans") or {})
    epochs = [int(s["epoch"]) for s in states]
    new_plans = {}
    for epoch in range(min(epochs), max(epochs) + 1):
        left = _unread(plans.get(str(epoch)), total, states, epoch, old_count)
        if left is not None:
            new_plans[str(epoch)] = left
    first = min((int(e) for e in new_plans), default=max(epochs) + 1)
    new_plans = {e: p for e, p in new_plans.items() if int(e) >= first}
    return [{"epoch": first, "cursor": 0, "plans": new_plans} for _ in range(count)]


def _unread(plan, total, states, epoch, old_count) -> dict | None:
    """The compact list of epoch ``epoch``'s positions no process has read (None: none left)."""
    head = [] if plan is None else [int(x) for x in plan["head"]]
    start = 0 if plan is None else int(plan["start"])
    length = len(head) + total - start
    read = []  # per process: how many of its share (indices p, p+N, ... of the list) it has read
    for p, state in enumerate(states):
        full = len(range(p, length, old_count))
        e, c = int(state["epoch"]), int(state["cursor"])
        read.append(full if e > epoch else (min(c, full) if e == epoch else 0))
    low = old_count * min(read)  # every index below is read
    high = max(len(head), old_count * max(read))  # every index from here on is unread and in the range part
    high = min(high, length)

    def position(i):
        return head[i] if i < len(head) else start + i - len(head)

    new_head = [position(i) for i in range(low, high) if i // old_count >= read[i % old_count]]
    new_start = start + max(0, high - len(head))
    if not new_head and new_start >= total:
        return None
    return {"head": new_head, "start": new_start}
