"""Shared CLI plumbing: --config with --config.a.b=v overrides, and one-line errors."""
from __future__ import annotations

import argparse
import sys

from t2t_jax.config import load_config
from t2t_jax.model.config import ConfigError


def parse_with_config(parser: argparse.ArgumentParser, argv=None):
    """Parse known flags; every remaining ``--config.key=value`` is a config override."""
    parser.add_argument("--config", required=True, help="config file, e.g. experiments/base.py[:arg]")
    args, rest = parser.parse_known_args(argv)
    overrides = [a for a in rest if a.startswith("--config.")]
    unknown = [a for a in rest if not a.startswith("--config.")]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        config = load_config(args.config, overrides)
    except ConfigError as error:
        fail(str(error))
    return args, config


def quiet_libraries() -> None:
    """Silence absl/orbax INFO and WARNING chatter (read-only managers warn on every open)."""
    from absl import logging as absl_logging

    absl_logging.set_verbosity(absl_logging.ERROR)


def fail(message: str) -> None:
    """Print one clear error line and exit 2 (no traceback for user errors)."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)
