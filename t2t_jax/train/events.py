"""TensorBoard event files (``<workdir>/tensorboard``): train/dev scalars, dev BLEU, sample translations.

Written with tensorboardX (protobuf only; no TensorFlow import in the training process) and only by
process 0.  ``tensorboard --logdir <workdir>/tensorboard`` shows them.  For an object-store workdir
(``gs://...``) the writer appends to a local staging folder whose files are copied to the workdir at every
``sync()`` (the loop calls it after each dev evaluation) and at ``close()``.
"""

from __future__ import annotations

import tempfile

from t2t_jax.workdir import Workdir, is_url, workdir_path

SCALARS = ("loss", "nll", "ppl", "accuracy", "lr", "tokens_per_s", "bleu")


class EventLog:
    """Scalars per split and markdown text; a no-op when disabled (other processes, or turned off)."""

    def __init__(self, workdir, enabled: bool = True):
        self.writer, self.staging = None, None
        self.target = Workdir(workdir).tensorboard
        if enabled:
            from tensorboardX import SummaryWriter

            self.staging = tempfile.mkdtemp(prefix="t2t_events_") if is_url(self.target) else None
            self.writer = SummaryWriter(self.staging or str(self.target), flush_secs=30)

    def scalars(self, split: str, step: int, metrics: dict) -> None:
        if self.writer is None:
            return
        for key in SCALARS:
            if metrics.get(key) is not None:
                self.writer.add_scalar(f"{split}/{key}", float(metrics[key]), step)

    def text(self, tag: str, step: int, markdown: str) -> None:
        if self.writer is not None:
            self.writer.add_text(tag, markdown, step)

    def sync(self) -> None:
        """Copy staged event files to an object-store workdir (no-op for a local one)."""
        if self.writer is None or self.staging is None:
            return
        self.writer.flush()
        self.target.mkdir(parents=True, exist_ok=True)
        for file in workdir_path(self.staging).iterdir():
            file.copy(self.target / file.name, overwrite=True)

    def close(self) -> None:
        if self.writer is not None:
            self.sync()
            self.writer.close()
