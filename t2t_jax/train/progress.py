"""Progress lines for long runs: step, loss, accuracy, learning rate, tokens/s, ETA."""

from __future__ import annotations

import time


def format_duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def bar(fraction: float, width: int = 20) -> str:
    """``[#######-------------]  35%``: plain ASCII, so it reads the same on a terminal and in a log file."""
    fraction = min(max(fraction, 0.0), 1.0)
    filled = int(round(fraction * width))
    return f"[{'#' * filled}{'-' * (width - filled)}] {100 * fraction:3.0f}%"


class Progress:
    """Measures throughput between reports and prints one line per report."""

    def __init__(self, total_steps: int, start_step: int = 0, printer=print, deadline: float | None = None):
        self.total = total_steps
        self.deadline = deadline  # time.perf_counter() at which a time budget ends, if any
        self.printer = printer
        self.last_time = time.perf_counter()
        self.last_step = start_step

    def report(self, step: int, metrics: dict, lr: float) -> dict:
        now = time.perf_counter()
        elapsed = max(now - self.last_time, 1e-9)
        steps = max(step - self.last_step, 1)
        tokens_per_s = metrics["tokens"] / elapsed  # global non-pad target tokens since the last report
        eta = (self.total - step) * elapsed / steps
        if self.deadline is not None:
            eta = min(eta, self.deadline - now)
        self.printer(
            f"step {step}/{self.total} {bar(step / max(self.total, 1))} | loss {metrics['loss']:.4f} | "
            f"nll {metrics['nll']:.4f} | "
            f"acc {metrics['accuracy']:.4f} | lr {lr:.3e} | {tokens_per_s:,.0f} tok/s | "
            f"ETA {format_duration(eta)}",
            flush=True,
        )
        self.last_time, self.last_step = now, step
        return {"tokens_per_s": tokens_per_s}
