"""``python -m t2t_jax.train --config experiments/smoke.py --workdir DIR [--config.a.b=v ...]``.

Trains (resuming from DIR), then, unless a signal stopped it, runs the configured final stage:
checkpoint averaging and evaluation of ``final.splits`` (see t2t_jax/train/finish.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from t2t_jax.cli.common import fail, parse_with_config, quiet_libraries
from t2t_jax.errors import T2TError


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="t2t-train",
        description="Train a Transformer, then average and evaluate as the config's `final` block says.",
    )
    parser.add_argument("--workdir", required=True, help="directory for config, summary and checkpoints")
    args, config = parse_with_config(parser, argv)
    quiet_libraries()
    import jax  # noqa: F401 - after argument errors are reported

    from t2t_jax.api import train_and_evaluate

    try:
        train_and_evaluate(config, args.workdir)  # every process takes part, the final stage too
    except T2TError as error:
        _leave(str(error))
    except jax.errors.JaxRuntimeError as error:
        if jax.process_count() == 1:
            raise
        _leave(
            f"a collective with the other processes failed ({str(error).splitlines()[0][:300]}): another "
            f"process has probably died; rerun every process to resume from the last complete checkpoint"
        )
    except Exception:
        if jax.process_count() == 1:
            raise
        traceback.print_exc()
        _leave(None, code=1)


def _leave(message, code: int = 2) -> None:
    """Print ``error: message`` and exit.  In a multi-process run exit at once: the polite exit
    (jax.distributed.shutdown at interpreter exit) waits minutes for the other processes, which wait in turn
    for this one — a failing process must leave the group so that the others see it gone and end too."""
    import jax

    if jax.process_count() == 1:
        fail(message)
    if message:
        print(f"error: {message}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
