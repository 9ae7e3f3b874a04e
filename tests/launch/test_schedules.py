"""Schedules over a run: ``algo.lr_end`` and ``algo.entropy_coeff_end`` are RLlib's own linear schedules over env
steps, ending at budget.env_steps or ``algo.schedule_env_steps``, and a resumed run's learner goes on from the run's
step (its learning rate from the optimizer state, its entropy coefficient moved by `resume_schedules`)."""
from __future__ import annotations

import pytest
import ray

import launch.training.trainers.rllib as train
from launch.training import build
from policies.league.pool import MAIN
from tests.launch.configs import train_config

SMOKE = ("+exp=smoke", "wandb.mode=disabled", "eval.every=0", "eval.final_games=0")


def test_the_end_values_make_linear_schedules_over_the_budget_or_their_own_steps():
    plain = build.build_algorithm_config(train_config("+exp=ppo_selfplay"))
    assert (plain.lr, plain.entropy_coeff) == (1e-3, 0.01)
    cfg = train_config("+exp=ppo_selfplay", "algo.lr_end=1e-4", "algo.entropy_coeff_end=0.001",
                       "budget.env_steps=32000000")
    built = build.build_algorithm_config(cfg)
    assert built.lr == [[0, 1e-3], [32_000_000, 1e-4]]
    assert built.entropy_coeff == [[0, 0.01], [32_000_000, 0.001]]
    cfg = train_config("+exp=ppo_selfplay", "algo.entropy_coeff_end=0", "algo.schedule_env_steps=64000000",
                       "budget.env_steps=2000000")  # a run taken through milestones: the schedule keeps its end
    assert build.build_algorithm_config(cfg).entropy_coeff == [[0, 0.01], [64_000_000, 0.0]]


@pytest.mark.parametrize("overrides,words", [
    (("algo.entropy_coeff_end=0.001", "budget.env_steps=0"),
     "algo.entropy_coeff_end=0.001 needs budget.env_steps (or algo.schedule_env_steps), where its schedule ends"),
    (("algo.entropy_coeff_end=-1",), "algo.entropy_coeff_end=-1.0 is not allowed: give a number in [0, 1000000]"),
    (("algo.schedule_env_steps=0",), "algo.schedule_env_steps=0 is not allowed: give a number >= 1 or null"),
])
def test_a_bad_schedule_is_one_line(overrides, words):
    with pytest.raises(ValueError) as err:
        train_config("+exp=ppo_selfplay", *overrides)
    assert words in str(err.value) and "\n" not in str(err.value)


def learner_schedules(algo) -> tuple[float, float]:
    """(entropy coefficient, learning rate) that main's next update on the learner would use."""
    def read(learner):
        [(_, optimizer)] = learner.get_optimizers_for_module(MAIN)
        return (float(learner.entropy_coeff_schedulers_per_module[MAIN].get_current_value()),
                float(learner._get_optimizer_lr(optimizer)))
    return [call.get() for call in algo.learner_group.foreach_learner(read)][0]


def test_a_resumed_learner_goes_on_with_the_runs_schedules(tmp_path):
    cfg = train_config(*SMOKE, "algo.lr=1e-3", "algo.lr_end=1e-5", "algo.entropy_coeff=0.05",
                       "algo.entropy_coeff_end=0", "budget.env_steps=4096", run_dir=str(tmp_path / "run"))
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        algo = build.build_algorithm_config(cfg).build_algo()
        for _ in range(2):
            result = algo.train()
        steps = train.env_steps_of(result)
        assert steps == 512
        want = (0.05 * (1 - steps / 4096), 1e-3 + (1e-5 - 1e-3) * steps / 4096)
        assert learner_schedules(algo) == pytest.approx(want)
        algo.save_to_path(str(tmp_path / "algorithm"))
        algo.stop()

        resumed = build.build_algorithm_config(cfg).build_algo()
        resumed.restore_from_path(str(tmp_path / "algorithm"))
        entropy, rate = learner_schedules(resumed)
        assert rate == pytest.approx(want[1])  # the optimizer state holds the rate
        assert entropy == pytest.approx(0.05)  # RLlib rebuilt the entropy schedule at step 0
        train.resume_schedules(resumed, steps)
        assert learner_schedules(resumed) == pytest.approx(want)  # not the entropy coefficient of step 0
        resumed.stop()
    finally:
        ray.shutdown()
