"""The configs that ship with the package: ``--config multi30k`` (or ``multi30k:arg``) from any directory.

Each module defines ``get_config([arg])`` returning the full schema of ``t2t_jax/config/defaults.py`` with
a few lines changed. The paper's base model is written once (base.py): big.py, Table 3's rows and the WMT14
recipes derive from it.
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
