"""Imports run one way: engine -> envs -> agents -> training/evaluation -> commands -> benchmarks, no cycles.

Every import is read with `ast`, at module level and inside functions alike (a lazy import is still a
dependency). ``from package import name`` counts as importing ``package.name`` when that is a module.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ludo_env", "policies", "launch", "benchmarks")
LAYERS = ("engine", "envs", "agents", "training/evaluation", "commands", "benchmarks")
# launch/'s folders name the boundary: launch/training/ is the training library, launch/ itself holds the commands
# (and web/, which serve.py runs); the package and cli.py, the option parsing every command and trainer shares, sit
# below the commands with the library.
TRAINING_PACKAGE = "launch.training"
SHARED = ("launch", "launch.cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def layer(module: str) -> int:
    top = module.split(".")[0]
    if module in ("ludo_env", "ludo_env.rules") or module.startswith("ludo_env.engine"):
        return LAYERS.index("engine")
    if top == "ludo_env":
        return LAYERS.index("envs")
    if top == "policies":
        return LAYERS.index("agents")
    if top == "launch":
        training = module in SHARED or module == TRAINING_PACKAGE or module.startswith(TRAINING_PACKAGE + ".")
        return LAYERS.index("training/evaluation" if training else "commands")
    return LAYERS.index("benchmarks")


def imports_of(module: str) -> set[tuple[str, int]]:
    """(project module imported, line) for every import statement anywhere in `module`."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # `import a.b.c` of a non-module name: its module
                target = target.rpartition(".")[0]
            # A module importing its own package (or itself) is no dependency between modules.
            if target and target != module and not module.startswith(target + "."):
                found.add((target, node.lineno))
    return found


GRAPH = {m: imports_of(m) for m in MODULES}


def test_the_layers_cover_a_known_set_of_modules():
    assert {"ludo_env.engine.kernels", "ludo_env.gym_env", "policies.players", "launch.training.runs", "launch.train",
            "benchmarks.evaluate"} <= set(MODULES)
    assert [layer(m) for m in ("ludo_env.rules", "ludo_env.gym_env", "policies.saved", "launch.training.trainers.ga",
                               "launch.train", "benchmarks.engine")] == list(range(len(LAYERS)))


def test_launch_top_level_holds_commands_only():
    """Every module directly in launch/ but cli.py is a command a user runs (``python launch/<name>.py``)."""
    not_commands = [p.name for p in sorted((ROOT / "launch").glob("*.py")) if module_name(p) not in SHARED
                    and 'if __name__ == "__main__":' not in p.read_text()]
    assert not not_commands, f"library modules at launch/'s top level (they belong in launch/training/): {not_commands}"


def test_the_training_command_is_no_library():
    """Benchmarks and tests take the trainers' pieces from `launch.training`, never from ``launch/train.py``."""
    importers = []
    for path in sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) and not node.level else [])
            if "launch.train" in names:
                importers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not importers, f"imports of the launch/train.py command: {importers}"


def test_no_module_imports_a_higher_layer():
    upward = [f"{MODULES[m].relative_to(ROOT)}:{line} ({LAYERS[layer(m)]}) imports {target} ({LAYERS[layer(target)]})"
              for m, targets in GRAPH.items() for target, line in sorted(targets) if layer(target) > layer(m)]
    assert not upward, "imports that go up:\n" + "\n".join(upward)


def test_no_import_cycles_among_project_modules():
    edges = {m: {t for t, _ in targets} for m, targets in GRAPH.items()}
    cycles = []
    # Tarjan's strongly connected components: any component of more than one module is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("module, forbidden", [("ludo_env.pettingzoo_env", "ray"), ("ludo_env.gym_env", "policies"),
                                               ("ludo_env.vector_env", "policies")])
def test_importing_an_env_loads_no_higher_layer(module, forbidden):
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.split('.')[0] == {forbidden!r}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
