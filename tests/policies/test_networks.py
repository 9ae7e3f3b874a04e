"""Configurable networks (`policies.networks`) inside the masked PPO and DQN modules; the encoders' token layout."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.models.base import ENCODER_OUT
from ray.rllib.core.rl_module.rl_module import RLModule
from torch import nn

from ludo_env.core import ACTION_SPACE, observation_space
from ludo_env.observations import ENCODERS, TOKEN_ENCODERS, encode, feature_names, obs_dim, token_layout
from policies.algorithms import REGISTRY as RLLIB_ALGORITHMS
from policies.modules import ACTION_MASK, OBSERVATIONS, module_spec
from policies.networks import NETWORK_KINDS, NetworkConfig, NetworkConfigError
from tests.positions import mid_game_positions

PRESETS = ("mlp", "seed000_qnet", "seed001_ann", "token_set")
SMALL_TOKEN_SET = {"kind": "token_set", "token_hidden": [16, 16], "hidden": [24], "head_hidden": [8], "attention_heads": 2}


def model_config(network, obs: str = "egocentric", **extra) -> dict:
    return {"obs": obs, "variant": "classic", "players": 4, "network": network, **extra}


def build(kind: str, network, obs: str = "egocentric", **extra):
    return module_spec(kind, observation_space(obs), ACTION_SPACE, model_config(network, obs, **extra)).build()


def engine_decisions(obs: str = "egocentric", players: int = 4, games: int = 32, plies: int = 60):
    """`(features, masks)` of real mid-game positions, each waiting on a decision."""
    states, tab, masks = mid_game_positions(players, games, plies, seed=5)
    return encode(obs, states, tab), masks.astype(np.float32)


def batch_of(features: np.ndarray, masks: np.ndarray) -> dict:
    obs = {OBSERVATIONS: torch.as_tensor(features), ACTION_MASK: torch.as_tensor(masks, dtype=torch.float32)}
    return {Columns.OBS: obs, Columns.NEXT_OBS: obs}


def scores(module, kind: str, batch: dict) -> torch.Tensor:
    """Logits (PPO) or Q-values (DQN), masked, without gradients."""
    with torch.no_grad():
        if kind == "ppo":
            return module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        return module.compute_q_values(batch)["qf_preds"]


def assert_masked(values: torch.Tensor, masks: np.ndarray, illegal) -> None:
    legal = torch.as_tensor(masks) > 0
    assert torch.isfinite(values[legal]).all()
    assert (values[~legal] == illegal).all()


# ---------------------------------------------------------------- every network in both modules
@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_builds_in_ppo_and_plays_and_trains_with_illegal_logits_masked(preset):
    features, masks = engine_decisions()
    module = build("ppo", preset)
    batch = batch_of(features, masks)
    assert_masked(scores(module, "ppo", batch), masks, -3.4e38)
    explored = module.forward_exploration(batch)[Columns.ACTION_DIST_INPUTS]
    assert_masked(explored.detach(), masks, -3.4e38)
    out = module.forward_train(batch)
    assert_masked(out[Columns.ACTION_DIST_INPUTS].detach(), masks, -3.4e38)
    values = module.compute_values(batch)
    assert values.shape == (len(masks),) and torch.isfinite(values).all()
    logp = torch.log_softmax(out[Columns.ACTION_DIST_INPUTS], -1)
    (-(logp.exp() * logp).nansum(-1).mean() + values.mean()).backward()
    grads = [p.grad for p in module.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("dueling", [True, False])
@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_builds_in_dqn_with_illegal_q_minus_inf_and_greedy_legal_moves(preset, dueling):
    features, masks = engine_decisions()
    module = build("dqn", preset, dueling=dueling)
    batch = batch_of(features, masks)
    q = scores(module, "dqn", batch)
    assert_masked(q, masks, float("-inf"))
    greedy = module.forward_inference(batch)[Columns.ACTIONS].numpy()
    assert (masks[np.arange(len(masks)), greedy] == 1).all()
    assert hasattr(module, "vf") == dueling


def test_distributional_dqn_builds_on_the_token_set():
    features, masks = engine_decisions(games=8)
    module = build("dqn", SMALL_TOKEN_SET, num_atoms=5)
    assert_masked(scores(module, "dqn", batch_of(features, masks)), masks, float("-inf"))


@pytest.mark.parametrize("network", [SMALL_TOKEN_SET, {"kind": "mlp", "hidden": [32]}, None], ids=["token_set", "mlp", "rllib"])
def test_distributional_dueling_adds_a_value_distribution_per_atom_and_its_value_head_learns(network):
    atoms = 5
    features, masks = engine_decisions(games=8)
    module = build("dqn", network, num_atoms=atoms, v_min=-2.0, v_max=2.0, dueling=True)
    out = module.compute_q_values(batch_of(features, masks))
    latent = module.encoder({Columns.OBS: torch.as_tensor(features)})[ENCODER_OUT]
    advantages = module.af(latent).reshape(len(features), 4, atoms)
    values = module.vf(latent)
    assert values.shape == (len(features), atoms)
    torch.testing.assert_close(out["qf_logits"], values[:, None, :] + advantages - advantages.mean(dim=1, keepdim=True))
    torch.testing.assert_close(out["qf_probs"].sum(dim=-1), torch.ones(len(features), 4))
    expected_q = (out["qf_probs"] * torch.linspace(-2.0, 2.0, atoms)).sum(dim=-1)
    legal = torch.as_tensor(masks) > 0
    torch.testing.assert_close(out["qf_preds"][legal], expected_q[legal])
    assert_masked(out["qf_preds"].detach(), masks, float("-inf"))
    # The learner's cross-entropy on a taken action's atoms reaches the value head (RLlib's own does not).
    out["qf_logits"].log_softmax(dim=-1)[:, 0, 0].mean().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in module.vf.parameters())


def test_the_network_key_is_stored_as_every_field_and_its_absence_keeps_rllibs_default_nets():
    module = build("ppo", "token_set")
    assert module.model_config["network"] == NetworkConfig.load("token_set").to_dict()
    default = module_spec("ppo", observation_space("egocentric"), ACTION_SPACE, model_config(None)).build()
    assert type(default.encoder.actor_encoder).__name__ == "TorchMLPEncoder"
    # kind mlp with PPO's default widths and activation is RLlib's default network.
    same = build("ppo", {"kind": "mlp", "hidden": [256, 256], "activation": "tanh"})
    shapes = {k: v.shape for k, v in default.state_dict().items()}
    assert {k: v.shape for k, v in same.state_dict().items()} == shapes


# ---------------------------------------------------------------- the seeds' designs
def test_seed000_qnet_is_256_256_128_relu_layernorm_with_orthogonal_init():
    module = build("dqn", "seed000_qnet", obs="seed000_enc128", dueling=False)
    layers = list(module.encoder.net)
    assert [type(layer) for layer in layers] == [
        nn.Linear, nn.ReLU, nn.LayerNorm, nn.Linear, nn.ReLU, nn.LayerNorm, nn.Linear, nn.ReLU
    ]
    linears = [layer for layer in layers if isinstance(layer, nn.Linear)]
    assert [(lin.in_features, lin.out_features) for lin in linears] == [(128, 256), (256, 256), (256, 128)]
    assert [ln.normalized_shape for ln in layers if isinstance(ln, nn.LayerNorm)] == [(256,), (256,)]
    head = [layer for layer in module.af.modules() if isinstance(layer, nn.Linear)]
    assert [(lin.in_features, lin.out_features) for lin in head] == [(128, 4)]
    for lin in linears + head:  # orthogonal with gain sqrt(2), zero bias, as the seed initialises
        w = lin.weight.detach()
        small = min(w.shape)
        gram = w @ w.T if w.shape[0] == small else w.T @ w
        torch.testing.assert_close(gram, 2.0 * torch.eye(small), atol=1e-4, rtol=0)
        assert (lin.bias == 0).all()


def test_seed001_ann_on_flags60_is_60_6_4_sigmoid_with_394_weights():
    module = build("dqn", "seed001_ann", obs="seed001_flags60", dueling=False)
    encoder = list(module.encoder.net)
    assert [type(layer) for layer in encoder] == [nn.Linear, nn.Sigmoid]
    assert (encoder[0].in_features, encoder[0].out_features) == (60, 6)
    head = [layer for layer in module.af.modules() if isinstance(layer, nn.Linear)]
    assert [(lin.in_features, lin.out_features) for lin in head] == [(6, 4)]
    assert sum(p.numel() for p in module.parameters()) == 394  # the paper's chromosome: 394 weights
    assert all(p.abs().max() <= 0.77 for p in module.parameters())
    # The paper's exact outputs: sigmoid output units.
    exact = build("dqn", {**NetworkConfig.load("seed001_ann").to_dict(), "output_activation": "sigmoid"},
                  obs="seed001_flags60", dueling=False)
    features, masks = engine_decisions("seed001_flags60", games=8)
    q = scores(exact, "dqn", batch_of(features, masks))
    assert ((q[masks > 0] > 0) & (q[masks > 0] < 1)).all()


def test_seed001_ann_builds_on_any_observation_size():
    assert build("ppo", "seed001_ann").encoder.actor_encoder.net[0].in_features == obs_dim("egocentric")


# ---------------------------------------------------------------- token set symmetries
def own_permuted(features: np.ndarray, masks: np.ndarray, order: list[int]):
    """Own token t takes the block (and mask bit) of token order[t]."""
    layout = token_layout("egocentric")
    out = features.copy()
    for t, source in enumerate(order):
        out[:, list(layout.own[t])] = features[:, list(layout.own[source])]
    return out, masks[:, order]


def opponents_permuted(features: np.ndarray, order: list[int]) -> np.ndarray:
    layout = token_layout("egocentric")
    out = features.copy()
    for slot, source in enumerate(order):
        out[:, list(layout.opponents[slot])] = features[:, list(layout.opponents[source])]
    return out


@pytest.mark.parametrize("pooling", ["attention", "mean", "max"])
def test_token_set_is_equivariant_over_own_tokens_and_invariant_over_opponent_tokens(pooling):
    torch.manual_seed(0)
    network = {**SMALL_TOKEN_SET, "pooling": pooling}
    ppo, dqn = build("ppo", network), build("dqn", network)
    features, masks = engine_decisions()
    own = token_layout("egocentric").own
    assert (features[:, list(own[0])] != features[:, list(own[1])]).any()  # the tokens differ: a real test
    base = batch_of(features, masks)
    logits, q = scores(ppo, "ppo", base), scores(dqn, "dqn", base)
    with torch.no_grad():
        values = ppo.compute_values(base)
    rng = np.random.default_rng(1)
    for _ in range(3):
        order = list(rng.permutation(4))
        moved = batch_of(*own_permuted(features, masks, order))
        torch.testing.assert_close(scores(ppo, "ppo", moved), logits[:, order], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(scores(dqn, "dqn", moved), q[:, order], atol=1e-5, rtol=1e-5)
        with torch.no_grad():
            torch.testing.assert_close(ppo.compute_values(moved), values, atol=1e-5, rtol=1e-5)

        shuffled = batch_of(opponents_permuted(features, list(rng.permutation(12))), masks)
        torch.testing.assert_close(scores(ppo, "ppo", shuffled), logits, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(scores(dqn, "dqn", shuffled), q, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("pooling", ["attention", "mean", "max"])
def test_token_set_leaves_absent_opponents_out_and_stays_finite_without_any(pooling):
    torch.manual_seed(0)
    module = build("ppo", {**SMALL_TOKEN_SET, "pooling": pooling})
    encoder = module.encoder.actor_encoder
    features, masks = engine_decisions(players=2, games=16)
    layout = token_layout("egocentric")
    blocks = torch.as_tensor(features[:, np.array(layout.opponents)])  # (B, 12, 8)
    assert (blocks[:, 4:] == 0).all()  # seat rows 2 and 3: unused in a 2-player game
    with torch.no_grad():
        own = encoder.own_encoder(torch.as_tensor(features[:, np.array(layout.own)]))
        # The context is the one of the present opponent alone: the 8 empty slots do not count.
        torch.testing.assert_close(
            encoder._opponent_context(own, blocks), encoder._opponent_context(own, blocks[:, :4]), atol=1e-6, rtol=1e-5
        )
    lonely = features.copy()
    lonely[:, [c for block in layout.opponents for c in block]] = 0.0
    assert_masked(scores(module, "ppo", batch_of(lonely, masks)), masks, -3.4e38)


@pytest.mark.parametrize("pooling", ["mean", "max"])
@pytest.mark.parametrize("layernorm,players", [(False, 4), (True, 4), (False, 2)])
def test_token_set_fuses_the_shared_part_once_as_the_concatenated_input_would(pooling, layernorm, players):
    """With one context for all own tokens, the encoder splits the fuse MLP's first layer (`_fuse_shared`): the
    same latent and gradients as the fuse MLP on the concatenated per-token input (`_fuse_input`)."""
    torch.manual_seed(3)
    network = {**SMALL_TOKEN_SET, "pooling": pooling, "layernorm": layernorm, "hidden": [24, 12]}
    encoder = build("dqn", network).encoder
    assert encoder.fuse_shared
    features, _ = engine_decisions(players=players, games=24)
    obs = torch.as_tensor(features)
    layout = token_layout("egocentric")
    own = encoder.own_encoder(obs[:, list(np.array(layout.own).ravel())].reshape(len(obs), 4, -1))
    context = encoder._opponent_context(own, obs[:, np.array(layout.opponents)])
    globals_ = obs[:, list(layout.globals)]
    split = encoder._fuse_shared(own, context, globals_)
    concatenated = encoder.fuse(encoder._fuse_input(own, context, globals_))
    torch.testing.assert_close(split, concatenated, atol=1e-5, rtol=1e-5)
    latent = encoder({Columns.OBS: obs})["encoder_out"]
    torch.testing.assert_close(latent, concatenated.reshape(len(obs), -1), atol=1e-5, rtol=1e-5)

    grads = []
    for z in (split, concatenated):
        encoder.zero_grad()
        (z ** 2).sum().backward(retain_graph=True)
        grads.append({k: v.grad.clone() for k, v in encoder.named_parameters() if v.grad is not None})
    assert grads[0].keys() == grads[1].keys() and grads[0]
    for key in grads[0]:
        torch.testing.assert_close(grads[0][key], grads[1][key], atol=1e-4, rtol=1e-4)


def test_token_set_with_attention_fuses_the_concatenated_input():
    assert not build("dqn", {**SMALL_TOKEN_SET, "pooling": "attention"}).encoder.fuse_shared


def test_token_set_on_flags60_reads_own_tokens_only():
    features, masks = engine_decisions("seed001_flags60", games=8)
    module = build("dqn", SMALL_TOKEN_SET, obs="seed001_flags60")
    assert not module.encoder.has_opponents
    assert_masked(scores(module, "dqn", batch_of(features, masks)), masks, float("-inf"))


# ---------------------------------------------------------------- config errors, presets, checkpoints
@pytest.mark.parametrize(
    "network, message",
    [
        ({"kind": "cnn"}, "network.kind='cnn' is not allowed: choose mlp, seed000_qnet, seed001_ann or token_set"),
        ({"activation": "swish"}, "network.activation='swish' is not allowed: choose relu, tanh, sigmoid"),
        ({"pooling": "sum"}, "network.pooling='sum' is not allowed: choose mean, max or attention"),
        ({"hidden": []}, "network.hidden=[] is not allowed: give a list of positive widths, at least one"),
        ({"head_hidden": [0]}, "network.head_hidden=[0] is not allowed"),
        ({"token_hidden": [30], "attention_heads": 4}, "network.attention_heads=4 is not allowed"),
        ({"widths": [3]}, "unknown network field 'widths': choose from kind, hidden"),
        ("resnet", ("unknown network 'resnet': choose mlp, seed000_qnet, seed001_ann, token_set, token_set_2x, "
                    "token_set_4x or token_set_deep")),
    ],
)
def test_a_bad_network_gives_one_clear_line(network, message):
    with pytest.raises(NetworkConfigError) as error:
        build("ppo", network)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_token_set_on_an_encoder_without_token_blocks_names_the_ones_with():
    with pytest.raises(NetworkConfigError) as error:
        build("dqn", "token_set", obs="seed000_raw62")
    assert str(error.value) == (
        "network.kind='token_set' needs an encoder with per-token blocks: obs='seed000_raw62' has none; "
        "choose egocentric, seed001_flags60, afterstates or afterstates_board"
    )


def test_presets_load_from_conf_network_and_work_as_a_structured_config():
    from omegaconf import OmegaConf

    for name in PRESETS:
        config = NetworkConfig.load(name)
        assert config.kind == name and NetworkConfig.load(config.to_dict()) == config
    assert set(NETWORK_KINDS) == set(PRESETS)
    schema = OmegaConf.structured(NetworkConfig)
    merged = OmegaConf.merge(schema, OmegaConf.create(NetworkConfig.load("token_set").to_dict()))
    assert OmegaConf.to_object(merged) == NetworkConfig.load("token_set")
    with pytest.raises(NetworkConfigError, match="network.kind='x'"):
        OmegaConf.to_object(OmegaConf.merge(schema, {"kind": "x"}))


@pytest.mark.parametrize("kind", list(RLLIB_ALGORITHMS))
@pytest.mark.parametrize("preset", PRESETS)
def test_a_state_dict_round_trip_gives_identical_outputs(kind, preset):
    features, masks = engine_decisions(games=12)
    batch = batch_of(features, masks)
    torch.manual_seed(1)
    trained = build(kind, preset)
    torch.manual_seed(2)
    fresh = build(kind, preset)
    assert not torch.equal(scores(fresh, kind, batch), scores(trained, kind, batch))
    fresh.load_state_dict(trained.state_dict())
    torch.testing.assert_close(scores(fresh, kind, batch), scores(trained, kind, batch), atol=0, rtol=0)


def test_a_token_set_module_checkpoint_rebuilds_the_same_network(tmp_path):
    features, masks = engine_decisions(games=12)
    batch = batch_of(features, masks)
    module = build("ppo", SMALL_TOKEN_SET)
    module.save_to_path(tmp_path / "module")
    loaded = RLModule.from_checkpoint((tmp_path / "module").as_posix())
    assert loaded.model_config["network"] == NetworkConfig.load(SMALL_TOKEN_SET).to_dict()
    torch.testing.assert_close(scores(loaded, "ppo", batch), scores(module, "ppo", batch), atol=0, rtol=0)


def test_parameter_counts_on_egocentric_are_the_documented_ones():
    def count(kind, preset):
        return sum(p.numel() for p in build(kind, preset).parameters())

    counts = {preset: (count("ppo", preset), count("dqn", preset)) for preset in PRESETS}
    assert counts == DOCUMENTED_COUNTS
    attention = {**NetworkConfig.load("token_set").to_dict(), "pooling": "attention"}
    assert (count("ppo", attention), count("dqn", attention)) == (131_586, 78_210)


DOCUMENTED_COUNTS = {  # policies/networks.py's table: (PPO, dueling DQN) on egocentric
    "mlp": (223_493, 112_389),
    "seed000_qnet": (290_693, 145_669),
    "seed001_ann": (2_159, 1_097),
    "token_set": (98_306, 61_570),  # mean pooling, the preset's default
}


# ---------------------------------------------------------------- token layout of the encoders
@pytest.mark.parametrize("name", ENCODERS)
def test_token_layout_matches_the_feature_names(name):
    layout = token_layout(name)
    if name not in TOKEN_ENCODERS:
        assert layout is None
        return
    names = feature_names(name)
    for t, block in enumerate(layout.own):
        assert [names[c] for c in block] == [f"own{t}.{f}" for f in layout.own_features]
    seats = [(r, t) for r in range(1, 4) for t in range(4)] if layout.opponents else []
    assert len(layout.opponents) == len(seats)
    for (r, t), block in zip(seats, layout.opponents):
        assert [names[c] for c in block] == [f"opp{r}.tok{t}.{f}" for f in layout.opponent_features]
    columns = [c for block in layout.own + layout.opponents for c in block] + list(layout.globals)
    assert sorted(columns) == list(range(obs_dim(name)))  # every column once
    assert not any(n.startswith(("own", "opp")) for n in (names[c] for c in layout.globals))


def test_egocentric_layout_is_the_documented_blocks():
    from ludo_env.observations import GLOBAL_FEATURES, OPP_FEATURES, OWN_FEATURES

    layout = token_layout("egocentric")
    assert [len(b) for b in layout.own] == [OWN_FEATURES] * 4
    assert [len(b) for b in layout.opponents] == [OPP_FEATURES] * 12
    assert len(layout.globals) == GLOBAL_FEATURES
    assert layout.own[1] == tuple(range(OWN_FEATURES, 2 * OWN_FEATURES))
    assert layout.opponents[0][0] == 4 * OWN_FEATURES


# ---------------------------------------------------------------- inside RLlib
@pytest.fixture(scope="module")
def ray_session():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield
    ray.shutdown()


def main_against_random(config, kind: str, **model_keys):
    """`config` with seats 0 and 2 played by a token-set ``main`` and seats 1 and 3 by the random bot."""
    from ludo_env.multi_agent_env import LudoMultiAgentEnv
    from policies.modules import multi_agent_spec

    return (
        config.environment(LudoMultiAgentEnv, env_config={"variant": "classic", "players": 4, "seed": 0})
        .multi_agent(
            policies={"main", "bot_random"},
            policy_mapping_fn=lambda agent_id, episode, **kw: "main" if agent_id in ("seat_0", "seat_2") else "bot_random",
            policies_to_train=["main"],
        )
        .rl_module(
            rl_module_spec=multi_agent_spec(
                {
                    "main": (kind, model_config(SMALL_TOKEN_SET, **model_keys)),
                    "bot_random": ("bot", {"bot": "random", "players": 4, "seed": 3}),
                }
            )
        )
        .debugging(log_level="ERROR")
    )


def test_ppo_with_the_token_set_runs_a_learner_update(ray_session):
    from ray.rllib.algorithms.ppo import PPOConfig

    config = (
        main_against_random(PPOConfig(), "ppo")
        .env_runners(num_env_runners=0, episodes_to_numpy=False, rollout_fragment_length=64, num_envs_per_env_runner=4)
        .training(train_batch_size_per_learner=256, minibatch_size=128, num_epochs=1)
    )
    algo = config.build_algo()
    try:
        before = {k: v.clone() for k, v in algo.get_module("main").state_dict().items()}
        result = algo.train()
        main = result["learners"]["main"]
        assert main["num_module_steps_trained"] > 0 and np.isfinite(main["total_loss"])
        after = algo.get_module("main").state_dict()  # the EnvRunner's copy, synced after the update
        assert any(not torch.equal(before[k], after[k]) for k in before)
    finally:
        algo.stop()


@pytest.mark.slow
def test_dueling_double_q_dqn_with_the_token_set_trains(ray_session):
    from ray.rllib.algorithms.dqn import DQNConfig

    config = (
        main_against_random(DQNConfig(), "dqn", dueling=True, double_q=True)
        .env_runners(num_env_runners=0, episodes_to_numpy=False, batch_mode="complete_episodes", rollout_fragment_length=200)
        .training(
            replay_buffer_config={"type": "MultiAgentEpisodeReplayBuffer", "capacity": 10_000},
            num_steps_sampled_before_learning_starts=200,
            train_batch_size_per_learner=64,
        )
    )
    algo = config.build_algo()
    try:
        for _ in range(2):
            result = algo.train()
        main = result["learners"]["main"]
        assert main["num_module_steps_trained"] > 0 and np.isfinite(main["qf_loss"])
    finally:
        algo.stop()


def test_a_kind_listed_without_builders_is_refused_rather_than_built_as_another_kind(monkeypatch):
    """A new kind added to NETWORK_KINDS, but not to the builders, must not pass for token_set or an MLP head."""
    import policies.networks as networks

    monkeypatch.setattr(networks, "NETWORK_KINDS", (*NETWORK_KINDS, "newkind"))
    config = NetworkConfig(kind="newkind", hidden=[8])
    with pytest.raises(NetworkConfigError, match="network.kind='newkind' has no encoder builder"):
        config.encoder_config(obs_dim("egocentric"), "egocentric")
    with pytest.raises(NetworkConfigError, match="network.kind='newkind' has no head builder"):
        config.head_config([8], 4, actions=4)
