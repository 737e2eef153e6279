"""Package metadata: every third-party module the package imports is a declared dependency (or an extra's)."""

import ast
import importlib.metadata
import pathlib
import re
import sys

import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    return {normalize(re.split(r"[\[<>=; ]", r, maxsplit=1)[0]) for r in requirements}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_modules() -> dict[str, str]:
    """Top-level module -> first file importing it, over the package's sources."""
    found = {}
    for path in sorted((ROOT / "t2t_jax").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
            )
            for name in names:
                found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def test_every_imported_distribution_is_declared():
    distributions = importlib.metadata.packages_distributions()
    missing = []
    for module, where in imported_modules().items():
        if module in sys.stdlib_module_names or module in ("t2t_jax", "__future__"):
            continue
        names = {normalize(d) for d in distributions.get(module, [])}
        assert names, f"{module} (imported in {where}) is not installed"
        if not names & declared():
            missing.append(f"{module} ({where}; distribution {sorted(names)})")
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_license_and_typing_marker_ship():
    assert "Apache License" in (ROOT / "LICENSE").read_text()[:200]
    assert (ROOT / "t2t_jax" / "py.typed").exists()


def test_console_scripts_and_the_dispatcher_name_the_same_commands():
    """One spelling per command: ``t2t-<command>`` is ``python -m t2t_jax <command>``, the same module's main."""
    from t2t_jax.__main__ import COMMANDS

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {f"t2t-{name}": f"t2t_jax.cli.{module}:main" for name, module in COMMANDS.items()}
    launchers = [
        p.name for p in (ROOT / "t2t_jax").rglob("*.py") if "__main__" in p.read_text() and p.name != "__main__.py"
    ]
    assert launchers == [], f"modules that start a command another way: {launchers}"
