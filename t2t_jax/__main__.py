"""``python -m t2t_jax <command> [flags]``: the same commands as the ``t2t-<command>`` console scripts, for an
environment whose scripts folder is not on PATH. ``python -m t2t_jax`` alone lists them."""

from __future__ import annotations

import importlib
import sys

# command -> the module under t2t_jax/cli that parses its flags (pyproject.toml's console scripts name the same)
COMMANDS = {
    "train": "train",
    "translate": "translate",
    "evaluate": "evaluate",
    "score": "score",
    "serve": "serve",
    "average": "average",
    "export": "export",
    "import-marian": "import_marian",
    "preprocess": "preprocess",
    "visualize": "visualize",
    "ablate": "ablate",
    "fetch": "fetch",
}


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        known = ", ".join(COMMANDS)
        if argv and argv[0] not in ("-h", "--help"):
            print(f"error: unknown command {argv[0]!r}; the commands: {known}", file=sys.stderr)
            sys.exit(2)
        print(f"usage: python -m t2t_jax <command> [--help]\ncommands: {known}")
        return
    module = importlib.import_module(f"t2t_jax.cli.{COMMANDS[argv[0]]}")
    sys.argv = [f"t2t-{argv[0]}", *argv[1:]]
    module.main(argv[1:])


if __name__ == "__main__":
    main()
