"""The configs that ship with the package: ``--config multi30k`` (or ``multi30k:arg``) from any directory.

Each module defines ``get_config([arg])`` returning the full schema of ``t2t_jax/config/defaults.py`` with
a few lines changed. ``experiments/<name>.py`` in a checkout re-exports the same function, so
``--config experiments/multi30k.py`` names the same config (also where no such file exists: its stem is
looked up here).

    import t2t_jax
    config = t2t_jax.configs.get("multi30k", "--config.train.max_minutes=10")
"""

from __future__ import annotations

import importlib
import pkgutil

NAMES = tuple(sorted(m.name for m in pkgutil.iter_modules(__path__)))


def names() -> tuple[str, ...]:
    """The packaged config names."""
    return NAMES


def module(name: str):
    """The module of packaged config ``name`` (KeyError if there is none)."""
    if name not in NAMES:
        raise KeyError(name)
    return importlib.import_module(f"{__name__}.{name}")


def get(spec: str, *overrides: str):
    """A validated run config: ``spec`` is a packaged name (``"multi30k"``, ``"table3:B_dk16"``) or a config
    file path; ``overrides`` are ``--config.a.b=value`` strings as on the command line."""
    from t2t_jax.config.loading import load_config

    return load_config(spec, overrides)
