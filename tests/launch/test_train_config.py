"""Training config without Ray running: composition, the schema's one-line errors, the RLlib config, the pool."""
from __future__ import annotations

import pickle
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import ray

from launch.cli import UserError, compose
from launch.training import build
from launch.training.algorithms import dqn, rllib_names
from launch.training.runs import RunDir, RunState, keep_run_settings, merge_overrides
from ludo_env.core import ACTION_SPACE, observation_space
from policies.league.pool import MAIN, Matchmaker, SnapshotPool
from policies.modules import module_spec
from tests.launch.configs import train_config

ROOT = Path(__file__).resolve().parents[2]
# The experiments RLlib trains; the others run their own loops (launch/training/trainers) and build no RLlib config.
EXPERIMENTS = sorted(p.stem for p in (ROOT / "conf" / "exp").glob("*.yaml")
                     if compose("config", [f"+exp={p.stem}"]).algo.name in rllib_names())


config = train_config


@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_every_experiment_composes_and_builds_without_starting_ray(exp):
    cfg = config(f"+exp={exp}")
    algo_config = build.build_algorithm_config(cfg)
    assert not ray.is_initialized()
    assert algo_config.episodes_to_numpy is False
    assert algo_config.policies_to_train == [MAIN] or set(algo_config.policies_to_train) == {MAIN}
    assert set(algo_config.policies) == {MAIN, *build.make_pool(cfg).module_ids}
    assert build.gpus_per_learner(cfg) in (0.0, 1.0)


@pytest.mark.parametrize("sampler, batch_mode, buffer_type", [
    # The batched sampler ships main's seats as single-agent chunks that continue across samples.
    ("batched", "truncate_episodes", "launch.training.replay_buffer.MainEpisodeReplayBuffer"),
    # Per-game multi-agent episodes crash on fragments with turn-based agents.
    ("per_game", "complete_episodes", "MultiAgentPrioritizedEpisodeReplayBuffer"),
])
def test_dqn_samples_into_a_prioritized_episode_buffer_with_alpha_and_beta(sampler, batch_mode, buffer_type):
    cfg = config("+exp=dqn_selfplay", f"sampler.name={sampler}")
    algo_config = build.build_algorithm_config(cfg)
    assert algo_config.batch_mode == batch_mode
    assert (algo_config.env_runner_cls is not None) == (sampler == "batched")
    buffer = algo_config.replay_buffer_config
    assert buffer["type"] == buffer_type
    assert buffer["alpha"] == cfg.algo.prioritized_alpha and buffer["beta"] == cfg.algo.prioritized_beta
    assert algo_config.double_q and algo_config.dueling and algo_config.n_step == cfg.algo.n_step
    main = build.main_model_config(cfg)
    assert main["epsilon"][0] == (0, 1.0) and main["dueling"] is True
    assert build.snapshot_model_config(cfg)["epsilon"] == [(0, dqn.SNAPSHOT_EPSILON)]


def test_a_distributional_head_reaches_the_learner_and_every_module_of_the_league():
    cfg = config("+exp=dqn_selfplay", "algo.num_atoms=21", "algo.v_min=-1.5", "algo.v_max=2.5")
    algo_config = build.build_algorithm_config(cfg)
    assert (algo_config.num_atoms, algo_config.v_min, algo_config.v_max) == (21, -1.5, 2.5)  # the learner's loss
    for model_config in (build.main_model_config(cfg), build.snapshot_model_config(cfg)):  # snapshots copy main
        assert (model_config["num_atoms"], model_config["v_min"], model_config["v_max"]) == (21, -1.5, 2.5)
    module = module_spec("dqn", observation_space(cfg.obs.name), ACTION_SPACE, build.main_model_config(cfg)).build()
    assert module.af.net[-1].out_features == 21 and module.vf.net[-1].out_features == 21  # per token; per atom


def test_config_groups_reach_the_modules_and_the_env():
    cfg = config("+exp=ppo_selfplay", "variant=ucsd", "variant.players=2", "network=token_set", "obs=egocentric",
                 "reward=potential")
    env = build.env_config(cfg)
    assert env["variant"]["name"] == "ucsd" and env["variant"]["players"] == 2 and env["reward"]["kind"] == "potential"
    main = build.main_model_config(cfg)
    assert main["players"] == 2 and main["network"]["kind"] == "token_set" and main["obs"] == "egocentric"


@pytest.mark.parametrize("overrides, message", [
    (["+exp=nope"], "exp/nope"),
    (["algo=sac"], "choose one of dqn, "),
    (["algo.lr=fast"], "algo.lr"),
    (["league.snapshot_evry=3"], "snapshot_evry"),
    (["resources.env_runners=-1"], "resources.env_runners=-1 is not allowed"),
    (["resources.gpus_per_learner=lots"], "gpus_per_learner='lots' is not allowed"),
    (["league.bots=[random,genius]"], "unknown bot 'genius'"),
    (["obs=pixels"], "choose one of"),
    (["network.kind=transformer"], "network.kind='transformer' is not allowed"),
    (["budget.minutes=0"], "the budget is unlimited"),
    (["wandb.mode=cloud"], "wandb.mode='cloud' is not allowed"),
    (["sampler.name=fast"], "sampler.name='fast' is not allowed: choose batched or per_game"),
    (["sampler.games=0"], "sampler.games=0 is not allowed"),
    (["sampler.games=100000000"], "sampler.games=100000000 is not allowed"),
    (["+exp=dqn_selfplay", "algo.lr_end=-1"], "algo.lr_end=-1.0 is not allowed"),
    (["+exp=ppo_selfplay", "algo.lr_end=1e-4", "budget.env_steps=0"], "algo.lr_end=0.0001 needs budget.env_steps"),
])
def test_bad_input_is_one_line(overrides, message):
    with pytest.raises((UserError, ValueError)) as err:
        config(*overrides)
    text = str(err.value)
    assert message in text and "\n" not in text


@pytest.mark.parametrize("exp", ["dqn_selfplay", "ppo_selfplay"])
def test_lr_end_makes_a_linear_schedule_over_the_budget(exp):
    constant = build.build_algorithm_config(config(f"+exp={exp}"))
    assert constant.lr == config(f"+exp={exp}").algo.lr
    cfg = config(f"+exp={exp}", "algo.lr=1e-3", "algo.lr_end=1e-5", "budget.env_steps=400000")
    assert build.build_algorithm_config(cfg).lr == [[0, 1e-3], [400000, 1e-5]]


def test_the_long_ppo_run_is_the_default_ppo_run_with_the_board_encoder_and_32m_uncapped_env_steps():
    default, long = config("+exp=ppo_selfplay", "variant=pyludo"), config("+exp=ppo_long", "variant=pyludo")
    assert long.obs.name == "afterstates_board" and long.name == "ppo_long"
    assert (long.budget.env_steps, long.budget.minutes) == (32_000_000, 0)
    assert replace(long, obs=default.obs, budget=default.budget, name=default.name) == default


def test_cli_bad_input_exits_2_with_one_line():
    for args in (["+exp=nope"], ["resume=/nonexistent/run"], ["algo.lr=fast"]):
        proc = subprocess.run([sys.executable, "launch/train.py", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=120, check=False)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, proc.stderr)


def test_cuda_absent_means_cpu_learner_never_a_hanging_gpu_request(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert build.gpus_per_learner(config()) == 0.0
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert build.gpus_per_learner(config()) == 1.0
    assert build.gpus_per_learner(config("resources.gpus_per_learner=0")) == 0.0


# ---------------------------------------------------------------- the pool
def test_matchmaker_always_seats_main_and_is_a_pure_function_of_the_episode():
    mm = Matchmaker(4, ("snapshot_0", "snapshot_1"), ("bot_random",), 0.5, 0.3, 0.2, seed=7)
    for key in map(str, range(300)):
        matchup = mm.matchup(key)
        assert MAIN in matchup.modules and len(matchup.modules) == 4
        assert mm.matchup(key) == matchup
    assert pickle.loads(pickle.dumps(mm)).matchup("x") == mm.matchup("x")


def test_matchmaker_draws_opponents_with_the_configured_weights():
    mm = Matchmaker(2, ("snapshot_0", "snapshot_1"), ("bot_random", "bot_hybrid"), 0.5, 0.3, 0.2, seed=1)
    n = 20_000
    counts = Counter()
    for key in map(str, range(n)):
        modules = mm.matchup(key).modules
        counts[modules[1] if modules[0] == MAIN else modules[0]] += 1  # the seat beside the learner seat
    # With two seats, the non-learner seat (when seat 0 is main) follows the weights; allow sampling noise.
    expected = mm.opponent_weights()
    assert set(counts) <= set(expected)
    assert abs(counts["snapshot_0"] / n - 0.15) < 0.02 and abs(counts["bot_hybrid"] / n - 0.1) < 0.02


def test_weights_of_missing_snapshots_and_bots_go_to_main():
    assert Matchmaker(4, (), (), 0.5, 0.3, 0.2).opponent_weights() == {MAIN: 1.0}
    weights = Matchmaker(4, ("snapshot_0",), (), 0.5, 0.3, 0.2).opponent_weights()
    assert weights == pytest.approx({MAIN: 0.7, "snapshot_0": 0.3})


def test_league_selfplay_seats_main_alone_even_with_snapshots_and_bots_in_its_pool():
    cfg = train_config("+exp=ppo_selfplay", "league=selfplay")
    league = cfg.league
    assert (league.main_weight, league.snapshot_weight, league.bot_weight, league.external_weight) == (1, 0, 0, 0)
    assert league.pfsp == train_config("+exp=ppo_selfplay").league.pfsp  # pfsp's other settings, unchanged
    mm = Matchmaker(4, ("snapshot_0", "snapshot_1"), ("bot_random",), league.main_weight, league.snapshot_weight,
                    league.bot_weight, seed=5)
    assert {module: weight for module, weight in mm.opponent_weights().items() if weight} == {MAIN: 1.0}
    assert all(mm.matchup(str(k)).modules == (MAIN,) * 4 for k in range(500))


def test_matchmaker_shares_the_snapshot_and_bot_weights_by_priority():
    mm = Matchmaker(4, ("snapshot_0", "snapshot_1"), ("bot_random", "bot_hybrid"), 0.5, 0.3, 0.2,
                    snapshot_priorities=(1.0, 3.0), bot_priorities=(0.0, 2.0))
    assert mm.opponent_weights() == pytest.approx(
        {MAIN: 0.5, "snapshot_0": 0.075, "snapshot_1": 0.225, "bot_random": 0.0, "bot_hybrid": 0.2})
    # All-zero priorities (main beats everyone) fall back to uniform rather than to nobody.
    flat = Matchmaker(4, ("snapshot_0", "snapshot_1"), (), 0.5, 0.5, 0.0, snapshot_priorities=(0.0, 0.0))
    assert flat.opponent_weights() == pytest.approx({MAIN: 0.5, "snapshot_0": 0.25, "snapshot_1": 0.25})
    with pytest.raises(ValueError, match="one weight >= 0 per snapshot"):
        Matchmaker(4, ("snapshot_0",), (), snapshot_priorities=(1.0, 2.0))


def test_snapshot_pool_knows_its_modules_and_orders_filled_slots_by_age():
    pool = SnapshotPool(4, 2, ["random"])
    assert pool.module_ids == ["snapshot_0", "snapshot_1", "bot_random"] and len(pool) == 0
    pool.fill(1, 30)
    pool.fill(0, 40)
    assert pool.filled == ["snapshot_1", "snapshot_0"] and len(pool) == 2
    with pytest.raises(ValueError, match="max_snapshots"):
        pool.fill(2, 50)


# ---------------------------------------------------------------- the run folder
def test_a_checkpoint_that_fails_midway_leaves_no_checkpoint_and_old_ones_are_pruned(tmp_path):
    run = RunDir(tmp_path)

    def fill(folder):
        folder.mkdir(parents=True)
        (folder / "algorithm").mkdir()

    def crash(folder):
        fill(folder)
        raise RuntimeError("killed while writing")

    for it in (1, 2, 3):
        run.save_checkpoint(it, RunState(iteration=it), fill, keep=2)
    with pytest.raises(RuntimeError):
        run.save_checkpoint(4, RunState(iteration=4), crash, keep=2)
    assert [p.name for p in run.checkpoint_dirs()] == ["iter_000002", "iter_000003"]
    assert run.read_state(run.checkpoint_dirs()[-1]).iteration == 3
    run.save_checkpoint(5, RunState(iteration=5), fill, keep=2)
    assert not list(run.checkpoints.glob(".tmp-*"))  # the half-written one is cleaned up


def test_a_checkpoint_the_disk_has_no_room_for_removes_what_it_wrote_and_leaves_the_one_before(tmp_path):
    import errno

    run = RunDir(tmp_path)

    def fill(folder):
        (folder / "algorithm").mkdir(parents=True)
        (folder / "algorithm" / "state.pkl").write_bytes(b"x" * 1000)

    def full(folder):
        fill(folder)
        raise OSError(errno.ENOSPC, "No space left on device", str(folder / "algorithm" / "more.pkl"))

    run.save_checkpoint(1, RunState(iteration=1), fill, keep=2)
    with pytest.raises(OSError, match="No space left"):
        run.save_checkpoint(2, RunState(iteration=2), full, keep=2)
    assert not list(run.checkpoints.glob(".tmp-*"))  # its space is free again at once, not at the next save
    assert [p.name for p in run.checkpoint_dirs()] == ["iter_000001"]
    assert run.read_state(run.checkpoint_dirs()[0]).iteration == 1


def test_resumed_overrides_keep_the_first_start_and_let_new_values_win():
    saved = ["+exp=dqn_selfplay", "budget.minutes=30", "seed=3"]
    assert merge_overrides(saved, ["resume=/r", "budget.minutes=60"]) == [
        "+exp=dqn_selfplay", "seed=3", "resume=/r", "budget.minutes=60"]


def test_a_resume_keeps_the_runs_settings_where_todays_defaults_differ(tmp_path):
    run = RunDir(tmp_path)
    first = ["+exp=dqn_selfplay", "variant=pyludo", "seed=3"]
    run.save_config(config(*first))
    saved = run.saved_config()
    # The run as an older version saw it: other defaults, a setting not yet added, one since removed.
    saved["algo"]["lr"] = 1e-3
    saved["algo"]["gamma"] = 0.95
    saved["variant"]["star_capture"] = "jump_end"  # pyludo before 2026-11-24: a default inside the variant file
    del saved["algo"]["advantage_learning"]
    saved["algo"]["old_knob"] = 1
    saved["resources"]["env_runners"] = 7  # the machine's: follows today
    overrides = [*first, "algo.gamma=0.98", f"resume={tmp_path}"]
    now = compose("config", [*overrides, "run_dir=x"])
    notes = keep_run_settings(now, saved, overrides)
    assert now.algo.lr == 1e-3 and now.variant.star_capture == "jump_end"  # given back
    assert now.algo.gamma == 0.98  # this command line's value wins
    assert now.algo.advantage_learning == 0.97 and now.resources.env_runners != 7
    assert notes == [
        ("note: resume keeps this run's settings where today's defaults differ: variant.star_capture='jump_end' "
         "(default now 'both'), algo.lr=0.001 (default now 0.0005)"),
        "note: settings added since this run started take today's defaults: algo.advantage_learning=0.97",
        "note: settings this run had no longer exist: algo.old_knob",
    ]
    assert keep_run_settings(compose("config", [*first, "run_dir=x"]), run.saved_config(), first) == []
    assert RunDir(tmp_path / "old").saved_config() is None
    assert "before runs saved their config.yaml" in keep_run_settings(now, None, overrides)[0]


def test_a_resume_onto_another_encoder_or_network_is_one_line_naming_the_overrides(tmp_path):
    from launch.training.trainers.rllib import check_same_network
    from policies.checkpoints import write_policy

    cfg = config("+exp=smoke")
    model_config = build.main_model_config(cfg)
    module = module_spec(cfg.algo.name, observation_space(cfg.obs.name), ACTION_SPACE, model_config).build()
    policy = write_policy(tmp_path / "policy", cfg.algo.name, model_config, module.state_dict())
    check_same_network(cfg, policy)  # as built: nothing to say
    check_same_network(config("+exp=smoke", "algo.lr=1e-4", "league.max_snapshots=3"), policy)  # not the network
    with pytest.raises(UserError) as error:
        check_same_network(config("+exp=smoke", "obs=afterstates", "network.hidden=[32]", "variant.players=2"),
                           policy)
    assert str(error.value) == (
        "resume: the run's main was built with obs=egocentric, network.hidden=[256,256], variant.players=4 and "
        "this config gives obs=afterstates, network.hidden=[32], variant.players=2: add obs=egocentric "
        "network.hidden=[256,256] variant.players=4 to resume it")


def test_external_members_take_their_share_and_a_league_without_them_draws_as_before():
    without = Matchmaker(4, bots=("bot_random",), main_weight=0.5, snapshot_weight=0.3, bot_weight=0.2)
    assert without.opponent_weights() == pytest.approx({MAIN: 0.8, "bot_random": 0.2})
    with_external = Matchmaker(4, bots=("bot_random",), main_weight=0.5, snapshot_weight=0.3, bot_weight=0.2,
                               externals=("td", "py:bots:Mine"), external_weight=0.2,
                               external_priorities=(3.0, 1.0))
    weights = with_external.opponent_weights()
    assert weights["td"] == pytest.approx(0.15 / 1.2) and weights["py:bots:Mine"] == pytest.approx(0.05 / 1.2)
    assert weights[MAIN] == pytest.approx(0.8 / 1.2)


@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_compile_learner_reaches_rllib_and_is_off_by_default(exp):
    assert build.build_algorithm_config(config(f"+exp={exp}")).torch_compile_learner is False
    assert build.build_algorithm_config(config(f"+exp={exp}", "resources.compile_learner=true")).torch_compile_learner
