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
from t2t_jax.data.text import DataError
from t2t_jax.model.config import ConfigError


def main(argv=None):
    parser = argparse.ArgumentParser(prog="t2t-train", description="Train a Transformer, then average and "
                                     "evaluate as the config's `final` block says.")
    parser.add_argument("--workdir", required=True, help="directory for config, summary and checkpoints")
    args, config = parse_with_config(parser, argv)
    quiet_libraries()
    import jax  # noqa: F401 - after argument errors are reported

    from t2t_jax.train.finish import final_splits, finish
    from t2t_jax.train.loop import train

    try:
        final_splits(config)  # a typo here fails now, not after the training
        summary = train(config, args.workdir)
        if summary["stopped"] in ("steps", "budget") and (config.final.average_last > 1 or final_splits(config)):
            finish(config, args.workdir)  # every process takes part (train/finish.py)
    except (ConfigError, DataError) as error:
        _exit_group(lambda: fail(str(error)))
    except jax.errors.JaxRuntimeError as error:
        if jax.process_count() == 1:
            raise
        _exit_group(lambda: fail(f"a collective with the other processes failed ({str(error).splitlines()[0][:300]}):"
                                 f" another process has probably died; rerun every process to resume from the last "
                                 f"complete checkpoint"))
    except BaseException:
        _exit_group(lambda: (traceback.print_exc(), sys.exit(1)))


def _exit_group(report) -> None:
    """Report and exit.  In a multi-process run, exit at once: the polite exit (jax.distributed.shutdown at
    interpreter exit) waits minutes for the other processes, which wait in turn for this one — a failing
    process must leave the group so the others see it gone and end too, instead of all of them hanging."""
    import jax

    if jax.process_count() == 1:
        report()
        return
    try:
        report()
    except SystemExit as done:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(done.code if isinstance(done.code, int) else 1)


if __name__ == "__main__":
    main()
