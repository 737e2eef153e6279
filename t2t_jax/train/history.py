"""``history.jsonl``, written while training runs, so a killed run keeps the curve up to its last line.

A local file gets each entry appended at once. An object store has no append: the file is rewritten at
``flush()`` (each evaluation, and the end), so at most the entries since the last evaluation are lost.
(The loop redraws curves.png from it: train/curves.py.)
A resumed run first drops the entries after the step it resumes from: it is about to redo those steps,
and the curve must show each step once.
"""

from __future__ import annotations

import json
import os

from t2t_jax.workdir import Workdir, is_url


def read_history(workdir) -> list[dict]:
    path = Workdir(workdir).history
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


class HistoryLog:
    def __init__(self, workdir, resume_step: int, enabled: bool = True):
        self.workdir = workdir
        self.path = Workdir(workdir).history
        self.enabled = enabled
        self.url = is_url(self.path)
        self.entries: list[dict] = []  # this segment's entries (the training summary holds them)
        self.pending = False  # object store: entries not yet written
        if enabled:
            kept = [entry for entry in read_history(workdir) if entry["step"] <= resume_step]
            self._earlier = kept
            if self.path.exists():
                self.path.write_text("".join(json.dumps(entry) + "\n" for entry in kept))

    def append(self, entry: dict) -> None:
        self.entries.append(entry)
        if not self.enabled:
            return
        if self.url:
            self.pending = True
            return
        with open(os.fspath(self.path), "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")

    def flush(self) -> None:
        if not self.enabled:
            return
        if self.pending:
            self.path.write_text("".join(json.dumps(entry) + "\n" for entry in self._earlier + self.entries))
            self.pending = False
