"""``python launch/train.py +exp=ga_ann``: a tiny run writes everything, plays as ckpt:, and bad input is one line."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from ludo_env.rules import Rules
from policies import evolution as ev
from policies.checkpoints import find_policy
from policies.tournament import play_tournament
from tests.agents.ga_runs import ROOT, TINY, reference_population, train
from tests.launch.configs import metrics, train_config


def test_a_tiny_run_writes_policy_population_plot_metrics_summary_and_plays_as_ckpt(tmp_path):
    run_dir = tmp_path / "run"
    proc = train(run_dir, *TINY, "algo.generations=2", "eval.final_games=40", "algo.select_games=20")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "gen    1 | fitness mean" in proc.stdout and "reproduce with:" in proc.stdout

    rows = metrics(run_dir)
    assert [r["iteration"] for r in rows] == [0, 1]
    assert all(r["fitness_max"] >= r["fitness_mean"] and r["games_per_s"] > 0 for r in rows)
    state = ev.GAState.load(run_dir / "population.npz")
    assert state.generation == 2 and state.population.shape == (6, 394) and state.history.shape == (2, 2)
    np.testing.assert_array_equal(state.population, reference_population(6, 10, 2))  # the library's GA, exactly
    assert (run_dir / "fitness.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list((run_dir / "wandb").glob("offline-run-*")), "no offline wandb run"
    assert (run_dir / "overrides.txt").read_text().splitlines()[0] == "+exp=ga_ann"

    # The selection's winner (the best so far or a final member, refought on fresh dice) is the run's policy;
    # ckpt:<run> plays it, and the printed numbers reproduce.
    assert find_policy(run_dir) == run_dir / "policy"
    chromosome, _ = ev.read_chromosome(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["generations"] == 2 and summary["best_fitness"] == pytest.approx(max(state.history[:, 1]))
    candidates = np.vstack([state.best[None, :], state.population])
    selection = summary["selection"]
    assert selection["games"] == 20 and selection["candidates"] == 7 and "policy is:" in proc.stdout
    winner = 0 if selection["winner"] == "the best so far" else 1 + int(selection["winner"].split()[1])
    np.testing.assert_array_equal(chromosome, candidates[winner])
    final = {r["opponent"]: r for r in summary["final_evaluation"]["results"]}
    assert set(final) == {"semi_smart", "random"} and len(summary["evaluate_commands"]) == 2
    result = play_tournament([f"ckpt:{run_dir}"] + ["semi_smart"] * 3, 40, Rules.load("pyludo"), seed=1_000_003,
                             rate=False)
    mine = next(r for r in result.rows if r.player == f"ckpt:{run_dir}")
    assert mine.win_rate == pytest.approx(final["semi_smart"]["win_rate"])


@pytest.mark.parametrize(
    "override,expected",
    [
        ("algo.init=/no/such/net", "algo.init='/no/such/net': no such path"),
        ("algo.mutation_rate=1.5", "algo.mutation_rate=1.5 is not allowed: give a number in [0, 1]"),
        ("algo.crossover_rate=-0.1", "algo.crossover_rate=-0.1 is not allowed"),
        ("algo.elitism=1.0", "algo.elitism=1.0 is not allowed"),
        ("algo.population=1", "algo.population=1 is not allowed"),
        ("algo.opponent=nobody", "algo.opponent: unknown bot 'nobody'"),
        ("algo.games=0", "algo.games=0 is not allowed"),
    ],
)
def test_bad_settings_are_refused_in_one_line(override, expected):
    with pytest.raises(ValueError) as err:
        train_config("+exp=ga_ann", override)
    assert str(err.value).startswith(expected) and "\n" not in str(err.value)


def test_an_init_that_is_not_a_ga_network_stops_the_script_with_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    proc = subprocess.run([sys.executable, "launch/train.py", *TINY, f"algo.init={tmp_path / 'empty'}",
                           f"hydra.run.dir={tmp_path / 'run'}", "wandb.mode=disabled"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: algo.init={tmp_path / 'empty'}: ") and "holds no policy" in lines[0]
