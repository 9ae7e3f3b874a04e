"""benchmarks/time_to_strength.py: its refusals, and the whole protocol on the smoke run: a band reached with the
training stopped and a training killed under it (one real command), and a band not reached (in-process)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.time_to_strength import BANDS, RESULTS, cli, medians, ratios

ROOT = Path(__file__).resolve().parents[2]
# The smoke run, smaller still: two iterations of 256 env steps, no evaluation of its own, few games per opponent.
# The evaluations at normal priority: on a busy machine nice 19 would leave them waiting.
GAMES = 10
TINY = ["--exp", "smoke", "--starts", "warm", "--every", "1", "--games", str(GAMES), "--eval-nice", "0",
        "wandb.mode=disabled", "eval.every=0", "eval.final_games=0", "league.lineups=1"]


def refused(argv: list[str], capsys) -> str:
    """The command run in-process on `argv`: it exits with status 2 and one line on stderr, which is returned."""
    with pytest.raises(SystemExit) as stop:
        cli(argv)
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert stop.value.code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err[-2000:]
    assert out == ""
    return lines[0]


@pytest.mark.parametrize("args,words", [
    (["--exp", "nope"], "--exp nope: no such experiment (there are: "),
    (["variant=classic"], "variant= is the benchmark's to set"),
    (["checkpoint.every=5"], "checkpoint.every= is the benchmark's to set"),
    (["--against", "no-such-ref-anywhere"], "--against no-such-ref-anywhere: not a commit of this repository"),
    (["--seeds", "0", "0"], "--seeds names a seed twice"),
    (["--starts", "tepid"], "argument --starts: invalid choice"),
    (["--games", "0"], "argument --games: 0 is not allowed"),
    (["--test-band", "0.5", "1.5"], "argument --test-band: 1.5 is not allowed: give a win rate in [0, 1]"),
    (["--eval-nice", "20"], "argument --eval-nice: 20 is not allowed: give a niceness from 0 to 19"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_options_are_one_line_and_start_nothing(tmp_path, capsys, args, words):
    line = refused([*args, "--out", str(tmp_path / "out")], capsys)
    assert words in line, line
    assert not (tmp_path / "out").exists()


def test_the_command_refuses_a_bad_option_in_one_line(tmp_path):
    done = subprocess.run([sys.executable, "benchmarks/time_to_strength.py", "--variant", "ucsd", "--out",
                           str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, check=False)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0] == "error: --variant ucsd: no band is set for it (there are: pyludo, classic)"
    assert not (tmp_path / "out").exists() and done.stdout == ""


def test_an_out_folder_with_results_is_refused(tmp_path, capsys):
    (tmp_path / RESULTS).write_text("{}")
    assert "holds the results of an earlier invocation" in refused(["--out", str(tmp_path)], capsys)


def test_every_variant_with_a_band_has_both_opponents():
    assert set(BANDS) == {"pyludo", "classic"}
    assert (BANDS["pyludo"].random, BANDS["pyludo"].hybrid) == (0.84, 0.50)
    assert (BANDS["classic"].random, BANDS["classic"].hybrid) == (0.84, 0.45)


def test_a_median_needs_every_seed_and_killed_attempts_are_not_counted():
    def attempt(tree, seed, status, wall=None):
        return {"tree": tree, "start": "warm", "seed": seed, "status": status, "wall_s": wall}

    cells = medians([attempt("this", 0, "reached", 100.0), attempt("this", 1, "reached", 140.0),
                     attempt("against", 0, "reached", 200.0), attempt("against", 1, "killed (signal 9)")])
    assert cells["this warm"]["median_s"] == 120.0 and cells["this warm"]["reached"] == 2
    assert cells["against warm"]["median_s"] is None and cells["against warm"]["not_counted"] == 1
    assert ratios(cells) == {"warm": None}
    cells["against warm"]["median_s"] = 240.0
    assert ratios(cells) == {"warm": 0.5}


@pytest.fixture
def checkpoint_key(tmp_path, monkeypatch):
    monkeypatch.setenv("LUDO_LEAGUE_CHECKPOINT_KEY", str(tmp_path / "key"))
    return dict(os.environ)


def test_a_band_set_low_is_reached_and_the_training_stopped_and_a_killed_one_not_counted(tmp_path, checkpoint_key):
    out = tmp_path / "out"
    driver = subprocess.Popen([sys.executable, "benchmarks/time_to_strength.py", *TINY, "--seeds", "0", "1",
                               "--test-band", "0", "0", "--out", str(out)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              stdin=subprocess.DEVNULL, env=checkpoint_key)
    lines = []
    for line in driver.stdout:  # seed 1's training is killed as soon as it has started
        lines.append(line)
        if line.startswith("this warm s1: training pid "):
            os.kill(int(line.split("training pid ")[1].split(",")[0]), signal.SIGKILL)
            break
    rest, errors = driver.communicate(timeout=600)
    text = "".join(lines) + rest
    assert driver.returncode == 1, (text + errors)[-3000:]  # an attempt was not counted
    results = json.loads((out / RESULTS).read_text())
    reached, killed = [a for a in results["attempts"] if a["start"] == "warm"]  # (a cold one fills an empty cache)

    assert reached["seed"] == 0 and reached["status"] == "reached" and reached["checkpoint"] == "iter_000001", reached
    assert reached["env_steps"] == 256 and 0 < reached["wall_s"] < 600
    assert f"this warm s0: reached at {reached['wall_s']:.0f} s (256 env steps, iter_000001)" in text
    first = reached["checkpoints"][0]
    assert first["random"]["games"] == GAMES and first["hybrid"]["games"] == GAMES  # both opponents played
    assert reached.get("stopped") == "by the benchmark, once a checkpoint was in the band" or reached["checkpoints"][
        -1]["checkpoint"] == "iter_000002"  # stopped, unless its second and last iteration ended first
    assert "a test band: not a time to strength" in text and results["test_band"]
    assert (out / "this" / "warm_s0" / "checkpoints" / "iter_000001" / "policy" / "weights.pt").is_file()

    assert killed["seed"] == 1 and killed["status"] == "killed (signal 9)", killed
    assert "this warm s1: killed (signal 9) (not counted" in text
    cell = results["medians"]["this warm"]
    assert (cell["median_s"], cell["reached"], cell["not_counted"], cell["seeds"]) == (None, 1, 1, 2)


def test_an_unreachable_band_is_not_reached_when_evaluated_after_the_run(tmp_path, checkpoint_key, capsys):
    out = tmp_path / "out"
    cli([*TINY, "budget.iterations=1", "--seeds", "0", "--test-band", "1", "1", "--eval-after", "--out", str(out)])
    text = capsys.readouterr().out
    results = json.loads((out / RESULTS).read_text())
    [ended] = [a for a in results["attempts"] if a["start"] == "warm"]  # (a cold one fills an empty cache)
    assert ended["status"] == "not reached" and "this warm s0: not reached" in text, ended
    assert [c["checkpoint"] for c in ended["checkpoints"]] == ["iter_000001"]
    assert ended["checkpoints"][0]["random"]["games"] == GAMES and "hybrid" not in ended["checkpoints"][0]
    assert "evaluated after each run" in text
    cell = results["medians"]["this warm"]
    assert (cell["median_s"], cell["reached"], cell["not_counted"], cell["seeds"]) == (None, 0, 0, 1)
