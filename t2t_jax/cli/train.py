"""``python -m t2t_jax.train --config experiments/smoke.py --workdir DIR [--config.a.b=v ...]``."""
from __future__ import annotations

import argparse

from t2t_jax.cli.common import fail, parse_with_config, quiet_libraries
from t2t_jax.model.config import ConfigError


def main(argv=None):
    parser = argparse.ArgumentParser(prog="t2t-train", description="Train a Transformer.")
    parser.add_argument("--workdir", required=True, help="directory for config, summary and checkpoints")
    args, config = parse_with_config(parser, argv)
    quiet_libraries()
    from t2t_jax.train.loop import train  # jax import after argument errors are reported

    try:
        train(config, args.workdir)
    except ConfigError as error:
        fail(str(error))


if __name__ == "__main__":
    main()
