"""``python -m t2t_jax.train --config experiments/smoke.py --workdir DIR [--config.a.b=v ...]``.

Trains (resuming from DIR), then, unless a signal stopped it, runs the configured final stage:
checkpoint averaging and evaluation of ``final.splits`` (see t2t_jax/train/finish.py).
"""
from __future__ import annotations

import argparse

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
        if summary["stopped"] in ("steps", "budget") and jax.process_index() == 0:
            if config.final.average_last > 1 or final_splits(config):
                finish(config, args.workdir)
    except (ConfigError, DataError) as error:
        fail(str(error))


if __name__ == "__main__":
    main()
