"""The engine stays a pure game library: no torch, ray, gymnasium or wandb."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

FORBIDDEN = {"torch", "ray", "gymnasium", "gym", "wandb", "pettingzoo", "hydra", "omegaconf"}
ENGINE_FILES = sorted(Path("ludo_env/engine").glob("*.py")) + [Path("ludo_env/rules.py"), Path("ludo_env/__init__.py")]


def test_engine_sources_import_no_rl_library():
    for path in ENGINE_FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN, f"{path} imports {name}"


def test_importing_and_running_the_engine_loads_no_rl_library():
    code = (
        "import sys\n"
        "from ludo_env import Rules\n"
        "from ludo_env.engine import compile_rules, new_batch, play_random\n"
        "tab = compile_rules(Rules.load('classic'))\n"
        "s, r = new_batch(tab, 4, 0); play_random(s, tab, r)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {sorted(FORBIDDEN)!r}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
