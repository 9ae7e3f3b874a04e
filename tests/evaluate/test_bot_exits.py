"""A `py:` bot that raises SystemExit does not end the program: evaluate.py and play.py refuse it in one line,
exit 2 (before, evaluate.py exited 0 with no report and play.py stopped mid-game with 0)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXITS = "py:tests.evaluate.example_bot:ExitsOnFirstMove"
EXITS_WHEN_BUILT = "py:tests.evaluate.example_bot:ExitsWhenBuilt"
FINE = "py:tests.evaluate.example_bot:FurthestBehind"


def run(script: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, f"launch/{script}", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False, input=stdin)


def assert_refused(done: subprocess.CompletedProcess, words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("bot,words", [
    (EXITS, "ExitsOnFirstMove.choose raised SystemExit(0): a bot cannot end the program"),
    (EXITS_WHEN_BUILT, "ExitsWhenBuilt() raised SystemExit(0): a bot cannot end the program"),
])
def test_evaluate_refuses_a_bot_that_exits(tmp_path, bot, words):
    out = tmp_path / "report.json"
    done = run("evaluate.py", f"players=[{bot},{FINE}]", "games=4", "variant=quick", "progress=false",
               f"out={out}", f"hydra.run.dir={tmp_path}")
    assert_refused(done, words)
    assert not out.exists()


def test_play_refuses_an_opponent_that_exits_mid_game():
    # The person answers every prompt with each token in turn (an illegal one is asked again) until the bot's
    # first decision, which raises SystemExit(0).
    done = run("play.py", f"opponents=[{EXITS}]", "variant=quick", "seed=3", "seat=1", "auto_forced=false",
               "record=null", stdin="0\n1\n" * 400)
    assert_refused(done, "ExitsOnFirstMove.choose raised SystemExit(0)")


def test_evaluate_refuses_a_bot_module_that_exits_when_imported(tmp_path):
    done = run("evaluate.py", "players=[py:tests.evaluate.exits_on_import:Bot,random]", "games=4", "variant=quick",
               "progress=false", f"hydra.run.dir={tmp_path}")
    assert_refused(done, "importing module 'tests.evaluate.exits_on_import' raised SystemExit")
