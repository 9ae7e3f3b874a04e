"""RLModules: masking, PPO against a bot inside RLlib, checkpoints played outside RLlib, bots as modules."""
from __future__ import annotations

import numpy as np
import pytest
import ray
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical

from ludo_env.core import ACTION_SPACE, observation_space
from policies.algorithms import REGISTRY as RLLIB_ALGORITHMS
from policies.bots import Bot
from policies.modules import (
    ACTION_MASK,
    OBSERVATIONS,
    STATE,
    BotRLModule,
    MaskedDQNTorchRLModule,
    MaskedPPOTorchRLModule,
    load_checkpoint_player,
    module_spec,
)
from tests.positions import mid_game_positions

OBS_SPACE = observation_space("egocentric")  # the env's own spaces
OBS_DIM = OBS_SPACE[OBSERVATIONS].shape[0]
ENV_KEYS = {"obs": "egocentric", "variant": "classic", "players": 4}
SMALL_NET = {**ENV_KEYS, "fcnet_hiddens": [16, 16]}
ALL_MASKS = np.array([[(m >> t) & 1 for t in range(4)] for m in range(1, 16)], dtype=np.float32)  # every non-empty mask


def build(kind: str, **model_config):
    return module_spec(kind, OBS_SPACE, ACTION_SPACE, {**SMALL_NET, **model_config}).build()


def module_batch(obs: np.ndarray, masks: np.ndarray) -> dict:
    return {
        Columns.OBS: {
            OBSERVATIONS: torch.as_tensor(obs, dtype=torch.float32),
            ACTION_MASK: torch.as_tensor(masks, dtype=torch.float32),
        }
    }


def random_decisions(seed: int, repeats: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Random features for every non-empty mask, `repeats` times over."""
    rng = np.random.default_rng(seed)
    masks = np.tile(ALL_MASKS, (repeats, 1))
    return rng.uniform(-1, 1, (len(masks), OBS_DIM)).astype(np.float32), masks


def engine_positions(players: int = 4, games: int = 48, plies: int = 40):
    """`(states, tab, masks)`: mid-game positions, each waiting on a decision."""
    return mid_game_positions(players, games, plies, seed=3)


# ---------------------------------------------------------------- masking
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_masked_ppo_never_picks_or_samples_an_illegal_token(seed):
    torch.manual_seed(seed)
    module = build("ppo")
    obs, masks = random_decisions(seed)
    logits = module.forward_exploration(module_batch(obs, masks))[Columns.ACTION_DIST_INPUTS]
    dist = TorchCategorical.from_logits(logits)
    assert (torch.softmax(logits, -1)[masks == 0] == 0).all()
    assert (masks[np.arange(len(masks)), logits.argmax(-1).numpy()] == 1).all()
    for _ in range(20):
        assert (masks[np.arange(len(masks)), dist.sample().numpy()] == 1).all()


def test_masked_ppo_loss_terms_stay_finite():
    # What PPO's loss reads from the masked logits: log-probabilities, entropy, KL, and their gradients.
    module = build("ppo")
    obs, masks = random_decisions(0)
    batch = module_batch(obs, masks)
    logits = module.forward_train(batch)[Columns.ACTION_DIST_INPUTS]
    old = TorchCategorical.from_logits(logits.detach() + 0.1 * torch.randn_like(logits))
    new = TorchCategorical.from_logits(logits)
    actions = new.sample()
    loss = -new.logp(actions).mean() - new.entropy().mean() + old.kl(new).mean() + module.compute_values(batch).mean()
    assert torch.isfinite(loss)
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in module.parameters() if p.grad is not None)


@pytest.mark.parametrize("dueling", [True, False])
def test_masked_dqn_sets_illegal_q_to_minus_inf_and_acts_legally(dueling):
    module = build("dqn", dueling=dueling, epsilon=[(0, 1.0), (1000, 0.0)])
    obs, masks = random_decisions(1)
    batch = module_batch(obs, masks)
    q = module.compute_q_values(batch)["qf_preds"].detach()
    assert torch.isneginf(q[masks == 0]).all() and torch.isfinite(q[masks == 1]).all()
    greedy = module.forward_inference(batch)[Columns.ACTIONS].numpy()
    np.testing.assert_array_equal(greedy, np.where(masks == 1, q.numpy(), -np.inf).argmax(1))
    # Epsilon 1 at t=0: every move random, drawn among the legal tokens only, all of them reachable.
    explored = np.stack([module.forward_exploration(batch, t=0)[Columns.ACTIONS].numpy() for _ in range(40)])
    assert (np.take_along_axis(np.tile(masks, (40, 1, 1)), explored[..., None], 2) == 1).all()
    assert {int(a) for a in explored[:, masks.sum(1) == 4].ravel()} == {0, 1, 2, 3}
    # Epsilon 0 later on: exploration is the greedy move.
    np.testing.assert_array_equal(module.forward_exploration(batch, t=1000)[Columns.ACTIONS].numpy(), greedy)


def test_masked_modules_build_on_the_observations_entry_and_keep_the_dict_space():
    module = build("ppo", fcnet_hiddens=[8])
    assert module.observation_space == OBS_SPACE
    assert module.encoder.actor_encoder.net.mlp[0].in_features == OBS_DIM
    assert build("dqn").encoder.net.mlp[0].in_features == OBS_DIM


def test_module_spec_refuses_unknown_kinds_and_modules_without_their_env():
    with pytest.raises(ValueError, match="unknown module kind 'a2c': choose one of ppo, dqn, bot"):
        module_spec("a2c")
    with pytest.raises(ValueError, match="model_config lacks players"):
        module_spec("ppo", OBS_SPACE, ACTION_SPACE, {"obs": "egocentric", "variant": "classic"}).build()
    with pytest.raises(ValueError, match="model_config lacks bot"):
        module_spec("bot", OBS_SPACE, ACTION_SPACE, {"players": 4}).build()


# ---------------------------------------------------------------- bots as modules
@pytest.mark.parametrize("bot", ["random", "heuristic000"])
def test_bot_module_plays_exactly_as_the_bot(bot):
    states, tab, masks = engine_positions()
    module = module_spec("bot", OBS_SPACE, ACTION_SPACE, {"bot": bot, "players": 4, "seed": 5}).build()
    assert isinstance(module, BotRLModule) and not isinstance(module, torch.nn.Module)  # nothing to train
    batch = {
        Columns.OBS: {
            STATE: torch.as_tensor(states.astype(np.int32)),  # as the env runner hands it over
            ACTION_MASK: torch.as_tensor(masks.astype(np.float32)),
        }
    }
    actions = module.forward_exploration(batch, t=0)[Columns.ACTIONS]
    expected = Bot(bot, seed=5).act(states.copy(), tab, masks.copy())
    np.testing.assert_array_equal(actions, expected)
    assert actions.dtype == np.int64 and (masks[np.arange(len(masks)), actions] == 1).all()
    with pytest.raises(NotImplementedError, match="leave it out of policies_to_train"):
        module.forward_train(batch)


# ---------------------------------------------------------------- playing outside RLlib
def save_policy(module, dest):
    """`module` as a policy folder (policy.json + weights.pt), what training writes and ckpt: loads."""
    from policies.checkpoints import write_policy

    kind = "ppo" if isinstance(module, MaskedPPOTorchRLModule) else "dqn"
    return write_policy(dest, kind, dict(module.model_config), module.state_dict())


@pytest.mark.parametrize("kind", list(RLLIB_ALGORITHMS))
def test_checkpoint_player_plays_the_module_greedily_and_legally(kind, tmp_path):
    module = build(kind)
    player = load_checkpoint_player(save_policy(module, tmp_path / "module"))
    assert isinstance(player.module, MaskedPPOTorchRLModule if kind == "ppo" else MaskedDQNTorchRLModule)
    assert (player.obs, player.variant, player.players) == ("egocentric", "classic", 4)
    obs, masks = random_decisions(2)
    actions = player.act(obs, masks.astype(np.int8))
    assert actions.dtype == np.int64 and actions.shape == (len(masks),)
    assert (masks[np.arange(len(masks)), actions] == 1).all()
    with torch.no_grad():
        out = module.forward_inference(module_batch(obs, masks))
    expected = out[Columns.ACTIONS] if kind == "dqn" else out[Columns.ACTION_DIST_INPUTS].argmax(-1)
    np.testing.assert_array_equal(actions, expected.numpy())


def test_loading_something_that_holds_no_policy_says_so(tmp_path):
    with pytest.raises(ValueError, match="holds no policy"):
        load_checkpoint_player(tmp_path)
    with pytest.raises(ValueError, match="holds no policy"):
        load_checkpoint_player(tmp_path / "missing")


# ---------------------------------------------------------------- inside RLlib
@pytest.fixture(scope="module")
def ray_session():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()


MOVES_SEEN: dict[str, int] = {}


def count_moves(*, samples, **kwargs):
    """`on_sample_end`: check every sampled move against the mask the mover was shown."""
    for episode in samples:
        for agent_episode in episode.agent_episodes.values():
            n = len(agent_episode)
            if n == 0:
                continue
            observations = agent_episode.get_observations(slice(0, n))
            if isinstance(observations, list):  # episodes kept as Python lists (episodes_to_numpy=False)
                masks = np.stack([o[ACTION_MASK] for o in observations])
            else:
                masks = np.asarray(observations[ACTION_MASK])
            actions = np.asarray(agent_episode.get_actions(slice(0, n)))
            MOVES_SEEN[agent_episode.module_id] = MOVES_SEEN.get(agent_episode.module_id, 0) + n
            MOVES_SEEN["illegal"] = MOVES_SEEN.get("illegal", 0) + int((masks[np.arange(n), actions] == 0).sum())


def main_against_a_bot(config, kind: str, **env_runners):
    """`config` set up for 4 seats: seats 0 and 2 play the learned "main", 1 and 3 the random bot."""
    from ludo_env.multi_agent_env import LudoMultiAgentEnv
    from policies.modules import multi_agent_spec

    MOVES_SEEN.clear()
    return (
        config.environment(LudoMultiAgentEnv, env_config={"variant": "classic", "players": 4, "seed": 0})
        .env_runners(num_env_runners=0, episodes_to_numpy=False, **env_runners)
        .multi_agent(
            policies={"main", "bot_random"},
            policy_mapping_fn=lambda agent_id, episode, **kw: "main" if agent_id in ("seat_0", "seat_2") else "bot_random",
            policies_to_train=["main"],
        )
        .rl_module(
            rl_module_spec=multi_agent_spec(
                {"main": (kind, SMALL_NET), "bot_random": ("bot", {"bot": "random", "players": 4, "seed": 3})}
            )
        )
        .callbacks(on_sample_end=count_moves)
        .debugging(log_level="ERROR")
    )


def assert_main_trained_and_every_move_was_legal(result):
    main = result["learners"]["main"]
    assert main["num_module_steps_trained"] > 0
    assert "bot_random" not in result["learners"] or "num_module_steps_trained" not in result["learners"]["bot_random"]
    assert MOVES_SEEN["main"] > 0 and MOVES_SEEN["bot_random"] > 0
    assert MOVES_SEEN["illegal"] == 0


def test_ppo_trains_main_against_a_bot_with_legal_moves_only(ray_session, tmp_path):
    from ray.rllib.algorithms.ppo import PPOConfig

    # Four games per EnvRunner: RLlib vectorises the multi-agent env.
    config = main_against_a_bot(PPOConfig(), "ppo", rollout_fragment_length=64, num_envs_per_env_runner=4).training(
        train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1
    )
    algo = config.build_algo()
    try:
        result = algo.train()
        assert_main_trained_and_every_move_was_legal(result)
        assert np.isfinite(result["learners"]["main"]["total_loss"])

        # The trained module plays on from its policy folder, outside RLlib; RLlib's own checkpoints (pickles)
        # are refused, never unpickled.
        algo.save_to_path(tmp_path / "algo")
        main = algo.get_module("main")
        player = load_checkpoint_player(save_policy(main, tmp_path / "policy"))
        assert isinstance(player.module, MaskedPPOTorchRLModule) and player.obs == "egocentric"
        modules_dir = tmp_path / "algo" / "learner_group" / "learner" / "rl_module"
        for folder in (modules_dir / "main", modules_dir, tmp_path / "algo"):
            with pytest.raises(ValueError, match="is an RLlib checkpoint, which loads only by unpickling"):
                load_checkpoint_player(folder)
    finally:
        algo.stop()


@pytest.mark.slow
def test_dqn_trains_main_against_a_bot_with_legal_moves_only(ray_session):
    from ray.rllib.algorithms.dqn import DQNConfig

    config = main_against_a_bot(
        DQNConfig(), "dqn", batch_mode="complete_episodes", rollout_fragment_length=200
    ).training(
        replay_buffer_config={"type": "MultiAgentEpisodeReplayBuffer", "capacity": 10_000},
        num_steps_sampled_before_learning_starts=200,
        train_batch_size_per_learner=64,
        dueling=True,
        double_q=True,
    )
    algo = config.build_algo()
    try:
        for _ in range(2):
            result = algo.train()
        assert_main_trained_and_every_move_was_legal(result)
        assert np.isfinite(result["learners"]["main"]["qf_loss"])
    finally:
        algo.stop()


def test_a_saved_module_plays_in_tournaments_and_as_a_gym_opponent(tmp_path):
    """`ckpt:<path>` works wherever a player is named: the evaluator and the gymnasium env's opponents."""
    from policies.envs import make_env
    from policies.tournament import play_tournament

    spec = f"ckpt:{save_policy(build('ppo'), tmp_path / 'module')}"
    result = play_tournament([spec, "random", "random", "random"], 8, "classic", seed=0)
    assert result.finished.all() and sum(r.games for r in result.rows) == 8 * 4
    env = make_env(opponents=[spec, "hybrid", "random"])
    obs, _ = env.reset(seed=0)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        done = terminated or truncated
    assert sorted(info["places"])[0] == 1


def test_ppo_acting_runs_the_actor_alone_and_gives_the_training_pass_logits():
    import torch
    from ray.rllib.core.columns import Columns

    from ludo_env.core import ACTION_SPACE, LudoGames, observation_space
    from ludo_env.rules import Rules
    from policies.modules import inference_batch, module_spec

    model_config = {"obs": "egocentric", "variant": "classic", "players": 4, "network": "token_set",
                    "vf_share_layers": False}
    module = module_spec("ppo", observation_space("egocentric"), ACTION_SPACE, model_config).build()
    games = LudoGames(Rules.load("classic"), 64, "egocentric")
    games.reset(np.arange(64), 5)
    obs = games.observe(np.arange(64))
    batch = inference_batch(obs["observations"], obs["action_mask"])
    calls = []
    hook = module.encoder.critic_encoder.register_forward_hook(lambda *args: calls.append(1))
    with torch.no_grad():
        acting = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        assert not calls  # the critic's encoder did not run
        training = module.forward_train(batch)[Columns.ACTION_DIST_INPUTS]
    hook.remove()
    torch.testing.assert_close(acting, training)
