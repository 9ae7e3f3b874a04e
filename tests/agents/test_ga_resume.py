"""A GA run killed with SIGKILL resumes from its last population save and ends as an uninterrupted run would."""
from __future__ import annotations

import numpy as np
import pytest

from policies import evolution as ev
from tests.agents.ga_runs import reference_population, train
from tests.launch.configs import kill_training_when, metrics

GENERATIONS = 12
ARGS = ["+exp=ga_ann", "algo.population=6", "algo.games=100", f"algo.generations={GENERATIONS}",
        "algo.population_every=2", "eval.final_games=0", "wandb.mode=disabled"]


def saved_generation(run_dir) -> int:
    try:
        return ev.GAState.load(run_dir / "population.npz").generation
    except ValueError:  # not written yet (it is replaced atomically, never seen half-written)
        return -1


@pytest.mark.slow
def test_a_run_killed_mid_evolution_resumes_at_its_save_and_matches_an_uninterrupted_run(tmp_path):
    run_dir = tmp_path / "run"
    kill_training_when(run_dir, ARGS, lambda: saved_generation(run_dir) >= 2, 240, "population save", poll_s=0.01)
    at_kill = ev.GAState.load(run_dir / "population.npz")
    assert 2 <= at_kill.generation < GENERATIONS and not (run_dir / "summary.json").exists(), "it was not killed"

    proc = train(run_dir, f"resume={run_dir}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"resumed at generation {at_kill.generation}" in proc.stdout
    # Generations after the save were played again, once each, and the run ends where an unkilled one would.
    assert [r["iteration"] for r in metrics(run_dir)] == list(range(GENERATIONS))
    final = ev.GAState.load(run_dir / "population.npz")
    assert final.generation == GENERATIONS and final.history.shape == (GENERATIONS, 2)
    np.testing.assert_array_equal(final.population, reference_population(6, 100, GENERATIONS))
