"""benchmarks/learning_curve.py reads a run's evaluations against minutes or env steps."""
from __future__ import annotations

import json

from benchmarks.learning_curve import curves


def evaluation(iteration, rates):
    return {"iteration": iteration,
            "results": [{"opponent": o, "win_rate": r, "ci95": [r - 0.125, r + 0.125]} for o, r in rates.items()]}


def test_each_evaluation_is_placed_at_its_iterations_minutes_or_env_steps(tmp_path):
    rows = [{"iteration": 1, "env_steps": 100, "minutes": 0.5}, {"iteration": 2, "env_steps": 200, "minutes": 1.0},
            {"iteration": 2, "env_steps": 250, "minutes": 1.5}]  # a resumed run logs iteration 2 again: the last wins
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    summary = {"minutes": 2.0, "env_steps": 300,
               "evaluations": [evaluation(1, {"random": 0.5, "hybrid": 0.25}), evaluation(2, {"random": 0.75})],
               "final_evaluation": {"results": evaluation(None, {"random": 1.0})["results"]}}  # no iteration: the end
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    assert curves(tmp_path) == {
        "random": [(0.5, 0.5, 0.375, 0.625), (1.5, 0.75, 0.625, 0.875), (2.0, 1.0, 0.875, 1.125)],
        "hybrid": [(0.5, 0.25, 0.125, 0.375)]}
    assert [point[0] for point in curves(tmp_path, "env_steps")["random"]] == [100, 250, 300]
