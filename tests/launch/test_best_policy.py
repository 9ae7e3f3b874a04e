"""A run's best policy (``<run>/best/``, `launch.training.loop.keep_best` and `settle_best`): chosen by the panel
score of
its evaluations, settled by the final evaluation, written so that a kill at any moment leaves a complete one."""
from __future__ import annotations

import json
import os
import shutil

import pytest
import torch

from launch.training.loop import final_evaluation, keep_best, settle_best
from launch.training.runs import SELECTION, RunDir, RunState, panel_score
from launch.training.trainers.td_lambda import TDLambda
from policies.checkpoints import POLICY_DIR, load_weights
from policies.players import make_player
from policies.td_lambda import make_value
from tests.launch.configs import train_config


def evaluation(iteration: int, *win_rates: float) -> dict:
    return {"iteration": iteration, "final": False, "seconds": 0.0,
            "results": [{"opponent": name, "win_rate": rate} for name, rate in zip(["random", "hybrid"], win_rates)]}


def td_trainer(run_dir, *overrides: str) -> TDLambda:
    return TDLambda(train_config("+exp=td_lambda", "algo.value=mlp", "algo.hidden=[8]", *overrides,
                                 run_dir=str(run_dir)))


def mark(trainer: TDLambda, iteration: int) -> None:
    """Make the trainer's value recognisable in a written policy: its first bias is the iteration."""
    with torch.no_grad():
        next(p for name, p in trainer.value.net.named_parameters() if "bias" in name).fill_(float(iteration))


def best_mark(run: RunDir) -> float:
    weights = load_weights(run.best / POLICY_DIR)
    return float(next(v for k, v in weights.items() if "bias" in k).flatten()[0])


def test_the_highest_panel_score_is_kept_and_ties_keep_the_earlier(tmp_path):
    trainer = td_trainer(tmp_path)
    state = RunState()
    steps = [(2, (0.40, 0.10)), (4, (0.50, 0.20)), (6, (0.45, 0.20)), (8, (0.60, 0.10)), (10, (0.30, 0.40))]
    kept = []
    for iteration, rates in steps:
        state.iteration, state.env_steps = iteration, 1000 * iteration
        state.evaluations.append(evaluation(iteration, *rates))
        mark(trainer, iteration)
        kept.append(keep_best(trainer, state))
    # 0.25, 0.35, 0.325, 0.35 (a tie: the earlier stays), 0.35 (a tie again)
    assert kept == [True, True, False, False, False]
    selection = trainer.run.best_selection()
    assert selection["iteration"] == 4 and selection["env_steps"] == 4000 and best_mark(trainer.run) == 4.0
    assert selection["score"] == pytest.approx(0.35) and selection["panel"] == ["random", "hybrid"]

    # A step without a new evaluation keeps nothing; a better one replaces best/.
    state.iteration = 11
    assert not keep_best(trainer, state)
    state.evaluations.append(evaluation(11, 0.70, 0.30))
    mark(trainer, 11)
    assert keep_best(trainer, state) and best_mark(trainer.run) == 11.0

    # Chosen on another panel, best/ is not comparable: the next evaluation on this run's panel replaces it.
    other_panel = td_trainer(tmp_path, "eval.panel=[random,heuristic000]")
    state.iteration = 12
    state.evaluations.append(evaluation(12, 0.10, 0.10))
    mark(other_panel, 12)
    assert keep_best(other_panel, state) and other_panel.run.best_selection()["iteration"] == 12


def test_a_kill_between_the_renames_leaves_the_previous_best(tmp_path):
    trainer = td_trainer(tmp_path)
    state = RunState(iteration=2)
    state.evaluations.append(evaluation(2, 0.4, 0.1))
    mark(trainer, 2)
    keep_best(trainer, state)
    run = trainer.run

    # The state `save_best` is in after its first rename: the old best moved aside, the new one still temporary.
    os.rename(run.best, run.path / ".best-old-4242")
    (run.path / ".best-tmp-4242" / POLICY_DIR).mkdir(parents=True)
    assert run.best_selection()["iteration"] == 2 and best_mark(run) == 2.0

    state.iteration = 3
    state.evaluations.append(evaluation(3, 0.9, 0.9))
    mark(trainer, 3)
    assert keep_best(trainer, state)
    assert sorted(p.name for p in run.path.iterdir() if p.name.startswith(".best")) == []
    assert json.loads((run.best / SELECTION).read_text())["iteration"] == 3


def test_the_final_evaluation_settles_between_the_last_and_the_best_evaluated(tmp_path):
    """Two different values A and B, each once the best-evaluated and once the last: both play the same final
    games, so exactly one of the two orders keeps the earlier policy, and the one kept scores higher."""
    kept_earlier = []
    for order, (first_seed, last_seed) in enumerate([(1, 2), (2, 1)]):
        trainer = td_trainer(tmp_path / f"run{order}", "eval.final_games=200")
        state = RunState(iteration=4, env_steps=4000)
        trainer.value = make_value("mlp", [8], first_seed)
        state.evaluations.append(evaluation(4, 0.99, 0.99))
        assert keep_best(trainer, state)

        trainer.value = make_value("mlp", [8], last_seed)
        state.iteration, state.env_steps = 9, 9000
        last_policy = tmp_path / f"last{order}"
        trainer.policy_writer()(last_policy)
        final = final_evaluation(trainer.cfg, trainer.rules, last_policy, 9)
        best = settle_best(trainer, state, last_policy, final)

        assert best == trainer.run.best_selection() and best["final_evaluation"]["results"][0]["games"] == 200
        if best["iteration"] == 4:
            kept_earlier.append(True)
            assert best["score"] == panel_score(best["final_evaluation"]) > panel_score(final)
        else:
            kept_earlier.append(False)
            assert best["iteration"] == 9 and best["final_evaluation"] == json.loads(json.dumps(final))
            assert panel_score(best["challenger"]["final_evaluation"]) <= panel_score(final)
            assert load_weights(trainer.run.best / POLICY_DIR).keys() == load_weights(last_policy).keys()
        make_player(f"ckpt:{trainer.run.best / POLICY_DIR}")  # best/ plays as any saved policy does
        shutil.rmtree(last_policy)
    assert sorted(kept_earlier) == [False, True]
