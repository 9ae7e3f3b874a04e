"""launch/evaluate.py end to end, in a subprocess: a small run writes its report; user errors are one line, exit 2."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOT = "py:tests.evaluate.example_bot:FurthestBehind"


def evaluate(*args: str, run_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "launch/evaluate.py", *args, f"hydra.run.dir={run_dir}", "progress=false"],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_small_run_prints_the_table_and_writes_the_report(tmp_path):
    # Your-own-bot players keep this run free of the bots' compilation (about 15 s).
    out = tmp_path / "report.json"
    run = evaluate(f"players=[{BOT},{BOT}]", "games=8", "seed=3", "variant=quick", f"out={out}", run_dir=tmp_path)
    assert run.returncode == 0, run.stderr
    assert f"report: {out}" in run.stdout and "95% CI" in run.stdout
    report = json.loads(out.read_text())
    assert report["games"] == 8 and report["variant"] == "quick" and report["rules"]["players"] == 2
    assert report["finished"] + report["truncated"] == 8
    assert (tmp_path / ".hydra" / "config.yaml").is_file()  # the run folder keeps the composed config


@pytest.mark.parametrize(
    "args,expected",
    [
        (["players=[hybrid,nobody]"], "error: unknown player 'nobody': use a bot name (random, fast,"),
        (["players=[random,random,random,random,random]"], "error: players=5 is not allowed for variant 'classic'"),
        (["gamez=10"], "error: Could not override 'gamez': Key 'gamez' not in 'EvaluateConfig'"),
        (["games=many"], "error: Error merging override games=many: Value 'many' of type 'str'"),
        (["variant=nope"], "error: In 'evaluate': Could not find 'variant/nope': choose one of classic,"),
        (["variant.blokades=true"], "error: unknown rule field 'blokades': allowed fields are"),
    ],
)
def test_user_errors_are_one_line_on_stderr_and_exit_2(tmp_path, args, expected):
    run = evaluate(*args, run_dir=tmp_path)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and run.stderr.startswith(expected), run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""
