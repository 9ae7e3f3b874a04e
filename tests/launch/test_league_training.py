"""The league inside a real RLlib algorithm: a snapshot reaches every EnvRunner at once, with main's weights."""
from __future__ import annotations

import numpy as np
import pytest
import ray

import launch.training.trainers.rllib as train
from launch.training import build
from launch.training.runs import RunState
from policies.league.league import League
from policies.league.pool import MAIN
from policies.league.store import LeagueStore
from tests.launch.configs import flat_weights, train_config


@pytest.fixture
def algo_and_league(tmp_path):
    cfg = train_config("+exp=smoke", "resources.env_runners=1", "resources.envs_per_runner=2",
                       "wandb.mode=disabled", run_dir=str(tmp_path))
    pool = build.make_pool(cfg)
    league = League(LeagueStore.open(tmp_path), build.league_settings(cfg), cfg.variant.name)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    algo = build.build_algorithm_config(cfg, pool, league.matchmaker(cfg.seed)).build_algo()
    try:
        yield cfg, algo, league, pool
    finally:
        algo.stop()
        ray.shutdown()
        league.store.close()


def test_a_new_snapshot_holds_mains_weights_on_the_learner_every_env_runner_and_disk(algo_and_league):
    cfg, algo, league, pool = algo_and_league
    algo.train()  # main moves away from its initial weights, which every slot also started from
    evaluator = train.PanelEvaluator(cfg)
    state = RunState(iteration=1)
    module_id = train.take_snapshot(algo, league, pool, state, evaluator, None)
    frozen = flat_weights(algo.learner_group.get_weights([MAIN])[MAIN])

    learner_copy = flat_weights(algo.learner_group.get_weights([module_id])[module_id])
    remote = algo.env_runner_group.foreach_env_runner(
        lambda runner, _id=module_id: runner.module[_id].get_state(), local_env_runner=False)
    assert len(remote) == cfg.resources.env_runners
    member = league.slot_members()[int(module_id.rpartition("_")[2])]
    on_disk = flat_weights(evaluator.weights_of(league.policy_folder(member)))
    for copy in (learner_copy, *map(flat_weights, remote), on_disk):
        assert copy.keys() == frozen.keys()
        for key in frozen:
            np.testing.assert_array_equal(copy[key], frozen[key], err_msg=key)

    # Training on does not touch the snapshot, and the EnvRunners' mapping now seats it.
    algo.train()
    after = flat_weights(algo.learner_group.get_weights([module_id])[module_id])
    assert all(np.array_equal(after[k], frozen[k]) for k in frozen)
    assert not all(np.array_equal(flat_weights(algo.learner_group.get_weights([MAIN])[MAIN])[k], frozen[k])
                   for k in frozen)
    train.install_matchmaker(algo, league.matchmaker(cfg.seed))
    seated = algo.env_runner_group.foreach_env_runner(
        lambda runner: runner.config.policy_mapping_fn.snapshots, local_env_runner=False)
    assert all(module_id in s for s in seated)
    assert member.name == "main@1" and member.kind == "snapshot" and member.active
