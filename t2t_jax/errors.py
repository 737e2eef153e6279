"""Every error a user can cause, in one place, so the command line turns any of them into one ``error:`` line
and an exit code that says which kind of failure it was (``EXIT_CODES``; cli/common.py::fail).

A ``T2TError`` is a problem with the user's input, environment or run (a bad config key, a corrupt file, a
full disk): its message says what is wrong and where. Anything else that escapes is a bug: one line that
says so, and its traceback with ``--debug`` (or ``T2T_DEBUG=1``). Each class keeps the builtin base it
always had, so ``except ValueError`` callers still work.
"""

from __future__ import annotations

EXIT_USAGE = 2  # a bad argument or config value, a refused export: fix the command
EXIT_DATA = 3  # bad input data: fix the file the message names
EXIT_CHECKPOINT = 4  # a checkpoint could not be read or written
EXIT_DIVERGED = 5  # the training loss became NaN/inf
EXIT_IO = 6  # a file or folder missing or not writable, a full disk
EXIT_BUG = 1  # anything unexpected: rerun with --debug for the traceback
EXIT_PEER = 75  # a peer process died or hung (train/watchdog.py); rerun every process to resume
EXIT_INTERRUPTED = 130  # Ctrl-C before any training state existed to save

EXIT_CODES = {
    0: "done (also: stopped by SIGTERM / SIGINT after saving a checkpoint)",
    EXIT_BUG: "unexpected error (a bug): rerun with --debug for the traceback",
    EXIT_USAGE: "usage: a bad argument or config value, a refused export",
    EXIT_DATA: "bad input data (the message names the file and line)",
    EXIT_CHECKPOINT: "a checkpoint could not be read or written",
    EXIT_DIVERGED: "training diverged (non-finite loss); the last finite checkpoint is kept",
    EXIT_IO: "a file or folder missing or not writable, or a full disk",
    EXIT_PEER: "another process of a multi-host run died or hung; rerun every process to resume",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}


class T2TError(Exception):
    """Base of the errors the CLI reports as one line (cli/common.py::fail)."""

    exit_code = EXIT_USAGE


class ConfigError(T2TError, ValueError):
    """A configuration value is wrong; the message names the key and the rule."""


class DataError(T2TError, ValueError):
    """Bad input data; the message names the file (and line) and what is wrong."""

    exit_code = EXIT_DATA


class ExportError(T2TError, ValueError):
    """The model uses something the target format cannot express."""


class CheckpointError(T2TError, RuntimeError):
    """A checkpoint could not be written (a full disk, a lost bucket permission): the run stops with one
    line, and the last complete checkpoint stays (orbax writes into a temporary folder, renamed when done)."""

    exit_code = EXIT_CHECKPOINT


class NonFiniteLoss(T2TError, RuntimeError):
    """The training loss became NaN/inf; the run stops and keeps its last finite checkpoint."""

    exit_code = EXIT_DIVERGED


def exit_code_of(error: BaseException) -> int:
    if isinstance(error, T2TError):
        return error.exit_code
    if isinstance(error, OSError):
        return EXIT_IO
    return EXIT_BUG
