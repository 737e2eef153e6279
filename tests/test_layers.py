"""The package's layers point down (docs/concepts.md, "Layers"): a module imports only its own package or a lower
layer, never one above it, and no modules import each other in a circle. Read from the source (every import,
also those inside functions), so the rule holds for lazy imports too."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "t2t_jax"

# Lowest first. A module of layer i may import the modules of its own package and of layers below i.
LAYERS = [
    ["errors"],
    ["special_ids", "workdir", "progress", "distributed", "huge_pages"],
    ["model"],
    ["config"],
    ["data", "checkpoint"],
    ["decode", "export"],
    ["evaluate"],
    ["train"],
    ["api"],
    ["server"],
    ["cli", "__main__"],
]
LAYER_OF = {unit: number for number, units in enumerate(LAYERS) for unit in units}


def modules() -> dict[str, pathlib.Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        name = ".".join(("t2t_jax", *path.relative_to(ROOT).with_suffix("").parts))
        found[name.removesuffix(".__init__")] = path
    return found


def imports(path: pathlib.Path, known: dict) -> set[str]:
    """The t2t_jax modules ``path`` imports (``from package import submodule`` counts as the submodule)."""
    targets = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("t2t_jax"):
            subs = {f"{node.module}.{a.name}" for a in node.names} & set(known)
            targets |= subs if len(subs) == len(node.names) else {node.module, *subs}
        elif isinstance(node, ast.Import):
            targets |= {a.name for a in node.names if a.name.startswith("t2t_jax.")}
    return {t for t in targets if t in known}


def unit(module: str) -> str:
    """The layer unit of a module: its first name under t2t_jax (a package or a top-level module)."""
    return module.split(".")[1] if "." in module else "__init__"


def test_every_module_belongs_to_a_layer():
    units = {unit(m) for m in modules()} - {"__init__"}
    missing = units - set(LAYER_OF)
    assert not missing, f"modules in no layer (add them to LAYERS and docs/concepts.md): {missing}"


def test_no_module_imports_a_layer_above_its_own():
    known = modules()
    upward = []
    for module, path in known.items():
        if module == "t2t_jax":  # the package's lazy public names
            continue
        for target in imports(path, known):
            if unit(target) != unit(module) and LAYER_OF[unit(target)] >= LAYER_OF[unit(module)]:
                upward.append(f"{module} imports {target}")
    assert not upward, "imports that point up or sideways:\n" + "\n".join(sorted(upward))


def test_no_import_cycles():
    known = modules()
    graph = {m: imports(p, known) - {m} for m, p in known.items()}
    state, cycles = {}, []

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(trail[trail.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)
