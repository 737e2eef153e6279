"""Every error a user can cause, in one place, so the command line turns any of them into one ``error:`` line.

A ``T2TError`` is a problem with the user's input, environment or run (a bad config key, a corrupt file, a
full disk): its message says what is wrong and where. Anything else that escapes is a bug and keeps its
traceback. Each class keeps the builtin base it always had, so ``except ValueError`` callers still work.
"""

from __future__ import annotations


class T2TError(Exception):
    """Base of the errors the CLI reports as one line (cli/common.py::user_errors)."""


class ConfigError(T2TError, ValueError):
    """A configuration value is wrong; the message names the key and the rule."""


class DataError(T2TError, ValueError):
    """Bad input data; the message names the file (and line) and what is wrong."""


class ExportError(T2TError, ValueError):
    """The model uses something the target format cannot express."""


class CheckpointError(T2TError, RuntimeError):
    """A checkpoint could not be written (a full disk, a lost bucket permission): the run stops with one
    line, and the last complete checkpoint stays (orbax writes into a temporary folder, renamed when done)."""


class NonFiniteLoss(T2TError, RuntimeError):
    """The training loss became NaN/inf; the run stops and keeps its last finite checkpoint."""
