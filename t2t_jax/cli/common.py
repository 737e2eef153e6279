"""Shared CLI plumbing: --config with --config.a.b=v overrides, and one-line errors."""

from __future__ import annotations

import argparse
import os
import sys

from t2t_jax.config import load_config
from t2t_jax.errors import T2TError
from t2t_jax.workdir import Workdir


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
    try:
        config = load_config(args.config, overrides)
    except T2TError as error:
        fail(str(error))
    return args, config


def quiet_libraries() -> None:
    """Silence absl/orbax INFO and WARNING chatter (read-only managers warn on every open)."""
    from absl import logging as absl_logging

    absl_logging.set_verbosity(absl_logging.ERROR)


def use_compilation_cache(workdir) -> None:
    """Keep compiled decoders in ``<workdir>/jax_cache`` (JAX's persistent compilation cache), so a later
    translate / evaluate of the same model and batch shapes loads them instead of compiling (each beam-search
    shape compiles for seconds on CPU, most of a first test-set evaluation).
    Call before anything is compiled; an explicit ``JAX_COMPILATION_CACHE_DIR`` wins; not a workdir: no-op."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR") or not Workdir(workdir).config.exists():
        return
    import jax

    jax.config.update("jax_compilation_cache_dir", str(Workdir(workdir).jax_cache))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # small models compile fast too


def fail(message: str) -> None:
    """Print one clear error line and exit 2 (no traceback for user errors)."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)
