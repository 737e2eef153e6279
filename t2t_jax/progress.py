"""Progress of long work, one owner for every command: training lines (step, loss, tokens/s, ETA) and a
``Meter`` for everything else (translating, evaluating, averaging, the final stage, preprocessing).

A meter on a terminal redraws one bar in place; written to a file or pipe (a job's log) it prints a plain
line every ``every_seconds`` and one at the end, so logs stay readable and still show the job is alive.
"""

from __future__ import annotations

import sys
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


class Meter:
    """``label [####------] 40% 400/1000 sentences | 37.1 sentences/s | ETA 0:16``.

    Call it with (done, total) (the ``progress`` callback of decode/translate.py) or ``update(done)``;
    ``total`` None shows the count and rate only. Output goes to ``printer`` (a print-like function: plain
    lines, e.g. a training run's log) or else to ``stream`` (default stderr: a live bar when it is a tty).
    """

    LIVE_INTERVAL = 0.2  # seconds between redraws on a terminal

    def __init__(self, label, total=None, *, unit="items", printer=None, stream=None, every_seconds=10.0):
        self.label, self.total, self.unit = label, total, unit
        self.printer = printer
        self.stream = sys.stderr if stream is None else stream
        self.live = printer is None and _isatty(self.stream)
        self.every = self.LIVE_INTERVAL if self.live else every_seconds
        self.started = time.perf_counter()
        # when a line was last written; a log's first line waits every_seconds (short work: one line at the end)
        self.last_shown = None if self.live else self.started
        self.done = 0
        self.finished = False

    def __call__(self, done, total=None):
        self.update(done, total)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, done, total=None):
        if total is not None:
            self.total = total
        self.done = done
        now = time.perf_counter()
        complete = self.total is not None and done >= self.total
        if complete or self.last_shown is None or now - self.last_shown >= self.every:
            self._show(self.line(now), final=complete)
            self.last_shown = now

    def close(self):
        """The last line (elapsed time instead of ETA), once."""
        if not self.finished:
            self._show(self.line(time.perf_counter()), final=True)

    def line(self, now) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        parts = [self.label]
        if self.total:
            parts.append(f"{bar(self.done / self.total)} {self.done:,}/{self.total:,} {self.unit}")
        else:
            parts.append(f"{self.done:,} {self.unit}")
        text = " ".join(parts) + f" | {rate:,.1f} {self.unit}/s"
        if self.total and self.done >= self.total:
            return text + f" | done in {format_duration(elapsed)}"
        if self.total and rate > 0:
            return text + f" | ETA {format_duration((self.total - self.done) / rate)}"
        return text + f" | {format_duration(elapsed)}"

    def _show(self, text, final):
        if self.finished:
            return
        self.finished = final
        if self.printer is not None:
            self.printer(text)
            sys.stdout.flush()  # a print-like printer writing to a log file: show the line now
        elif self.live:
            self.stream.write("\r\033[K" + text + ("\n" if final else ""))
            self.stream.flush()
        else:
            self.stream.write(text + "\n")
            self.stream.flush()


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class TrainingProgress:
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
