"""``python -m t2t_jax train --config smoke --workdir DIR [--config.a.b=v ...]``.

Trains (resuming from DIR), then, unless a signal stopped it, runs the configured final stage:
checkpoint averaging and evaluation of ``final.splits`` (see t2t_jax/train/finish.py).
"""

from __future__ import annotations

import argparse
import os
import sys

from t2t_jax.cli.common import command, parse_with_config, quiet_libraries, report
from t2t_jax.errors import EXIT_PEER, CheckpointError
from t2t_jax.huge_pages import relaunch_with_huge_pages


@command
def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="t2t-train",
        description="Train a Transformer, then average and evaluate as the config's `final` block says.",
    )
    parser.add_argument("--workdir", required=True, help="directory for config, summary and checkpoints")
    args, config = parse_with_config(parser, argv)
    relaunch_with_huge_pages("t2t-train")
    quiet_libraries()
    import jax  # noqa: F401 - after argument errors are reported

    from t2t_jax.api import train_and_evaluate

    try:
        train_and_evaluate(config, args.workdir)  # every process takes part, the final stage too
    except jax.errors.JaxRuntimeError as error:
        if jax.process_count() == 1:
            raise
        _leave(
            f"a collective with the other processes failed ({str(error).splitlines()[0][:300]}): another "
            f"process has probably died; rerun every process to resume from the last complete checkpoint",
            EXIT_PEER,
        )
    except Exception as error:
        if jax.process_count() == 1 and not isinstance(error, CheckpointError):
            raise  # command() reports it
        _leave(error)  # a failed save leaves orbax's writer threads behind: exit without waiting for them


def _leave(problem, code: int | None = None) -> None:
    """Report and exit at once. In a multi-process run the polite exit (jax.distributed.shutdown at
    interpreter exit) waits minutes for the other processes, which wait in turn for this one — a failing
    process must leave the group so that the others see it gone and end too."""
    code = report(problem, code)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
