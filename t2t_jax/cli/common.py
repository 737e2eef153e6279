"""Shared CLI plumbing: --config with --config.a.b=v overrides, and the one error path of every command.

Every command's ``main`` is wrapped in ``command``: an expected failure is one ``error:`` line and the exit
code of its kind (t2t_jax/errors.py, ``EXIT_CODES``); anything unexpected is one line saying it is a bug.
``--debug`` anywhere on the command line (or ``T2T_DEBUG=1``) adds the traceback.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import traceback

from t2t_jax.config import load_config
from t2t_jax.errors import EXIT_BUG, EXIT_INTERRUPTED, EXIT_USAGE, exit_code_of
from t2t_jax.workdir import Workdir

DEBUG_FLAG = "--debug"
DEBUG_ENV = "T2T_DEBUG"


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def command(main):
    """``main(argv)`` with the one error path: ``--debug`` taken out of argv (it sets T2T_DEBUG=1), any
    escaping exception turned into ``fail``."""

    @functools.wraps(main)
    def run(argv=None):
        argv = list(sys.argv[1:] if argv is None else argv)
        if DEBUG_FLAG in argv:
            argv = [a for a in argv if a != DEBUG_FLAG]
            os.environ[DEBUG_ENV] = "1"
        sys.unraisablehook = _quiet_closed_loop_callbacks(sys.unraisablehook)
        try:
            return main(argv)
        except KeyboardInterrupt:
            fail("interrupted", code=EXIT_INTERRUPTED)
        except Exception as error:  # SystemExit (argparse, fail) passes through
            fail(error)

    return run


def parse_with_config(parser: argparse.ArgumentParser, argv=None):
    """Parse known flags; every remaining ``--config.key=value`` is a config override."""
    parser.add_argument(
        "--config", required=True, help="a packaged config (multi30k, base, table3:B_dk16, ...) or a file path[:arg]"
    )
    args, rest = parser.parse_known_args(argv)
    overrides = [a for a in rest if a.startswith("--config.")]
    unknown = [a for a in rest if not a.startswith("--config.")]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    config = load_config(args.config, overrides)
    return args, config


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """--workdir or --ensemble, and --checkpoint: which trained model(s) a decoding command reads."""
    parser.add_argument("--workdir", help="the trained model (or give --ensemble)")
    parser.add_argument(
        "--ensemble",
        nargs="+",
        metavar="WORKDIR[:CHECKPOINT]",
        help="decode with several models sharing a vocabulary: the mean of their log-probabilities at each step",
    )
    parser.add_argument("--checkpoint", default="latest", help="latest, best, averaged or a step number")


def add_stop_argument(parser: argparse.ArgumentParser) -> None:
    """--stop: when a beam search ends (decode/search.py's STOP_RULES; checked by decoder.check_beam)."""
    parser.add_argument(
        "--stop",
        default="exact",
        help="exact (default: until no live hypothesis can beat the best finished one, as tensor2tensor) or "
        "beam_finished (once beam hypotheses have finished, as CTranslate2 and fairseq: fewer steps)",
    )


def model_workdir(args) -> str:
    """The workdir of the model given (the first of an ensemble); exactly one of --workdir / --ensemble."""
    if bool(args.workdir) == bool(args.ensemble):
        fail("give --workdir or --ensemble (one of them)")
    return args.workdir or args.ensemble[0].partition(":")[0]


def quiet_libraries() -> None:
    """Silence absl/orbax logging (read-only managers warn on every open; a failed background save logs each
    failing thread's traceback, thousands of lines, while the run reports it once: checkpoint/manager.py).
    With --debug only INFO is dropped."""
    from absl import logging as absl_logging

    absl_logging.set_verbosity(absl_logging.WARNING if debugging() else absl_logging.FATAL)


def _quiet_closed_loop_callbacks(hook):
    """``sys.unraisablehook`` without the "Event loop is closed" RuntimeErrors that tensorstore's I/O
    callbacks raise, hundreds of them, when a failed async save's event loop is already gone (the failure
    itself is reported once); everything else as before, and everything with --debug."""

    def unraisablehook(unraisable):
        value = unraisable.exc_value
        if debugging() or not (isinstance(value, RuntimeError) and str(value) == "Event loop is closed"):
            hook(unraisable)

    return unraisablehook


def use_compilation_cache(workdir) -> None:
    """Keep compiled decoders in ``<workdir>/jax_cache`` (JAX's persistent compilation cache), so a later
    translate / evaluate of the same model and batch shapes loads them instead of compiling (each beam-search
    shape compiles for seconds on CPU, most of a first test-set evaluation).
    Call before anything is compiled; an explicit ``JAX_COMPILATION_CACHE_DIR`` wins; not a workdir: no-op."""
    explicit = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    if not explicit and not Workdir(workdir).config.exists():
        return
    import jax

    if not explicit:
        jax.config.update("jax_compilation_cache_dir", str(Workdir(workdir).jax_cache))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # small models compile fast too


def report(problem, code: int | None = None) -> int:
    """Print one ``error:`` line about ``problem`` and return its exit code. ``problem``: a message (usage,
    unless ``code``) or the exception itself (its kind's code; an unexpected one is called a bug). Tracebacks
    only when debugging."""
    if isinstance(problem, BaseException):
        code = exit_code_of(problem) if code is None else code
        if debugging():
            traceback.print_exception(problem)
        message = str(problem) or type(problem).__name__
        if code == EXIT_BUG:
            message = (
                f"unexpected {type(problem).__name__}: {message} (a bug: rerun with {DEBUG_FLAG} for the "
                f"traceback, and please report it)"
            )
    else:
        message, code = problem, EXIT_USAGE if code is None else code
    sys.stdout.flush()
    print(f"error: {message}", file=sys.stderr, flush=True)
    return code


def fail(problem, code: int | None = None) -> None:
    """``report`` and exit with its code."""
    sys.exit(report(problem, code))
