"""TensorBoard event files (``<workdir>/tensorboard``): train/dev scalars, dev BLEU, sample translations.

Written with tensorboardX (protobuf only; no TensorFlow import in the training process) and only by
process 0.  ``tensorboard --logdir <workdir>/tensorboard`` shows them.
"""
from __future__ import annotations

import pathlib

SCALARS = ("loss", "nll", "ppl", "accuracy", "lr", "tokens_per_s", "bleu")


class EventLog:
    """Scalars per split and markdown text; a no-op when disabled (other processes, or turned off)."""

    def __init__(self, workdir, enabled: bool = True):
        self.writer = None
        if enabled:
            from tensorboardX import SummaryWriter

            self.writer = SummaryWriter(str(pathlib.Path(workdir) / "tensorboard"), flush_secs=30)

    def scalars(self, split: str, step: int, metrics: dict) -> None:
        if self.writer is None:
            return
        for key in SCALARS:
            if metrics.get(key) is not None:
                self.writer.add_scalar(f"{split}/{key}", float(metrics[key]), step)

    def text(self, tag: str, step: int, markdown: str) -> None:
        if self.writer is not None:
            self.writer.add_text(tag, markdown, step)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
