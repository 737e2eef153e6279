"""Load a config file (``path.py`` or ``path.py:arg``) and apply ``--config.a.b=value`` overrides.

Unknown keys are an error that lists the valid keys at that level; values are
parsed as Python literals and must keep the type of the default.
"""

from __future__ import annotations

import ast
import importlib.util
import pathlib
from collections.abc import Iterable

import ml_collections

from t2t_jax.config.validation import validate_run_config
from t2t_jax.errors import ConfigError
from t2t_jax.model.config import ModelConfig


def load_config(spec: str, overrides: Iterable[str] = ()) -> ml_collections.ConfigDict:
    """``spec`` is a config file ``file.py[:arg]`` or a packaged config ``name[:arg]`` (config/presets/); the
    config defines ``get_config([arg])``."""
    path, _, arg = spec.partition(":")
    module, file = _config_module(path)
    if not hasattr(module, "get_config"):
        raise ConfigError(f"{path} does not define get_config()")
    try:
        config = module.get_config(arg) if arg else module.get_config()
    except ConfigError:
        raise
    except Exception as error:  # noqa: BLE001 - e.g. an unknown Table 3 row
        source = pathlib.Path(module.get_config.__code__.co_filename)  # a re-exported config raises in its own file
        named = path if source.resolve() == pathlib.Path(path).resolve() else str(source)
        raise ConfigError(f"{named}{_where(error, source)}: {type(error).__name__}: {error}") from None
    for override in overrides:
        apply_override(config, override)
    model_config(config)  # validate now, not after minutes of data loading
    validate_run_config(config)
    return config


def _config_module(path: str):
    """(module, its file) of a config file, or of the packaged config ``path`` names."""
    from t2t_jax.config import presets

    file = pathlib.Path(path)
    if not file.is_file():
        if path not in presets.names():
            raise ConfigError(
                f"config not found: {path} is neither a file nor a packaged config ({', '.join(presets.names())})"
            )
        module = presets.module(path)
        return module, pathlib.Path(module.__file__)
    module_spec = importlib.util.spec_from_file_location(f"_t2t_config_{file.stem}", file)
    if module_spec is None or file.suffix != ".py":
        raise ConfigError(f"--config {path}: a config file is Python defining get_config(), ending in .py")
    module = importlib.util.module_from_spec(module_spec)
    try:
        module_spec.loader.exec_module(module)
    except SyntaxError as error:
        raise ConfigError(f"{error.filename or path}:{error.lineno}: {error.msg} (config file)") from None
    except Exception as error:  # noqa: BLE001 - a config file is user code: report where it failed
        raise ConfigError(f"{path}{_where(error, file)}: {type(error).__name__}: {error} (while loading it)") from None
    return module, file


def _where(error: BaseException, file: pathlib.Path) -> str:
    """``:LINE`` of the innermost frame of ``error`` inside ``file`` (empty when none is)."""
    import traceback

    lines = [
        frame.lineno
        for frame in traceback.extract_tb(error.__traceback__)
        if pathlib.Path(frame.filename).resolve() == file.resolve()
    ]
    return f":{lines[-1]}" if lines else ""


def apply_override(config: ml_collections.ConfigDict, override: str) -> None:
    """Apply ``a.b=value`` (a leading ``--config.`` / ``config.`` is stripped)."""
    text = override.removeprefix("--").removeprefix("config.")
    key, sep, raw = text.partition("=")
    if not sep:
        raise ConfigError(f"override {override!r} is not of the form --config.key=value")
    *parents, leaf = key.split(".")
    node = config
    for depth, name in enumerate(parents):
        node = _child(node, name, ".".join(parents[:depth]))
        if not isinstance(node, ml_collections.ConfigDict):
            raise ConfigError(f"config key {'.'.join(parents[: depth + 1])!r} is a value, not a section")
    _child(node, leaf, ".".join(parents))
    old = node[leaf]
    with node.unlocked():
        node[leaf] = _parse_value(raw, old, key)


def _child(node, name, where):
    if name not in node:
        valid = ", ".join(sorted(node.keys()))
        raise ConfigError(
            f"unknown config key {((where + '.') if where else '') + name!r}; valid keys"
            f"{' under ' + where if where else ''}: {valid}"
        )
    return node[name]


def _parse_value(raw: str, old, key: str):
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw  # bare strings: --config.model.ln=pre
    if old is None or value is None:
        return value
    if isinstance(old, bool) or isinstance(value, bool):
        if not isinstance(old, bool) or not isinstance(value, bool):
            raise ConfigError(f"config.{key}: expected {type(old).__name__}, got {raw!r}")
        return value
    if isinstance(old, float) and isinstance(value, int):
        return float(value)
    if not isinstance(value, type(old)):
        raise ConfigError(f"config.{key}: expected {type(old).__name__}, got {raw!r}")
    return value


def model_config(config: ml_collections.ConfigDict) -> ModelConfig:
    """The validated, frozen ModelConfig of a run config."""
    return ModelConfig.from_mapping(config.model.to_dict())
