"""Each algorithm is declared once (`launch.training.algorithms`) and everything reads that declaration: the
agents' registry, the settings schemas and the saved kinds name the same RLlib algorithms, each entry is complete,
an unknown name is one line, and a new algorithm registered in one place is found by the schema, the builder,
the command and the throughput benchmark."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from hydra.core.config_store import ConfigStore
from ray.rllib.algorithms.ppo import PPOConfig

from benchmarks import train_throughput
from launch.training import build, schema
from launch.training.algorithms import REGISTRY as ALGORITHMS
from launch.training.algorithms import Algorithm, RLlibTraining, algorithm, ppo, rllib_names, rllib_training
from launch.training.algorithms.base import RLLIB_TRAINER
from launch.training.settings import RLlibSettings
from policies import algorithms as agent_algorithms
from policies.algorithms import REGISTRY, ModuleAlgorithm, module_algorithm
from policies.modules import MaskedPPOTorchRLModule, module_spec
from policies.saved import REGISTRY as SAVED
from tests.launch.configs import train_config


def test_every_rllib_algorithm_is_declared_once_in_every_registry():
    assert set(REGISTRY) == set(rllib_names())
    for name in rllib_names():
        assert rllib_training(name).module is REGISTRY[name], name
        assert SAVED[name].module is not None and SAVED[name].value is not None, name
    for name, entry in ALGORITHMS.items():
        assert entry.name == name and entry.settings().name == name, name


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_entry_builds_its_module_scores_and_value(name):
    import numpy as np

    from ludo_env.core import ACTION_SPACE, observation_space
    from policies.modules import inference_batch, module_spec

    agent_side = module_algorithm(name)
    cfg = train_config(f"algo={name}")
    module = module_spec(name, observation_space(cfg.obs.name), ACTION_SPACE, build.main_model_config(cfg)).build()
    obs = np.zeros((3, observation_space(cfg.obs.name)["observations"].shape[0]), np.float32)
    batch = inference_batch(obs, np.ones((3, 4), np.int8))
    assert tuple(agent_side.scores(module, batch).shape) == (3, 4)
    assert tuple(agent_side.value(module, batch).shape) == (3,)
    assert agent_side.scores_name and agent_side.scores_meaning
    assert isinstance(agent_side.config_class().model_config, dict)
    training = rllib_training(name)
    assert set(training.progress(cfg, 0, {})) <= {"entropy", "entropy_coeff", "epsilon", "q_mean"}
    assert training.warmup_steps(cfg) >= 0 and training.update_text(cfg)


def test_an_unknown_algorithm_is_one_line_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"^unknown RLlib algorithm 'a2c': choose ppo or dqn$"):
        module_algorithm("a2c")
    with pytest.raises(ValueError, match=r"^algo.name='a2c' is not an RLlib algorithm here: choose ppo or dqn$"):
        rllib_training("a2c")
    with pytest.raises(ValueError, match=r"^algo.name='ga' is not an RLlib algorithm here: choose ppo or dqn$"):
        rllib_training("ga")
    with pytest.raises(ValueError, match=r"^algo.name='a2c' is not allowed: choose ppo or dqn or ga or imitate"):
        algorithm("a2c")
    with pytest.raises(Exception, match="a2c"):
        schema.check(train_config("+exp=smoke", "algo.name=a2c"))


# ---------------------------------------------------------------- a third algorithm: one file and one entry
@dataclass
class FakeSettings(RLlibSettings):
    name: str = "fake"
    entropy_coeff: float = 0.03
    vf_share_layers: bool = False

    RANGES = {**RLlibSettings.RANGES, "entropy_coeff": RLlibSettings.RANGES["lr"]}
    CHOICES = {"name": ("fake",)}


def _fake_apply(config, cfg, batched: bool) -> None:
    config.training(lr=cfg.algo.lr, gamma=cfg.algo.gamma, entropy_coeff=cfg.algo.entropy_coeff,
                    train_batch_size_per_learner=cfg.algo.train_batch_size, minibatch_size=64)


FAKE_MODULE = ModuleAlgorithm("fake", PPOConfig, "policies.modules:MaskedPPOTorchRLModule",
                              "policies.modules:MaskedPPOCatalog", agent_algorithms._logits, "logits", "fake logits",
                              agent_algorithms._critic, policy_prior=True)
FAKE = Algorithm("fake", FakeSettings, RLLIB_TRAINER, RLlibTraining(
    module=FAKE_MODULE, experiment="ppo_selfplay", main_heads=ppo.main_heads, snapshot_heads={"fake": True},
    apply=_fake_apply, progress=lambda cfg, steps, learner: {"fake_steps": steps},
    warmup_steps=lambda cfg: 0, replays=False, update_text=lambda cfg: "one fake update"))


@pytest.fixture
def fake_algorithm(monkeypatch):
    """The fake declared the way a real one is: its entry, the agents' entry, and a conf/algo option."""
    monkeypatch.setitem(ALGORITHMS, "fake", FAKE)
    monkeypatch.setitem(REGISTRY, "fake", FAKE_MODULE)
    store = ConfigStore.instance()
    schema.register()
    store.store(group="algo", name="fake", node=FakeSettings)  # conf/algo/fake.yaml's part in a real one
    yield FAKE
    store.repo["algo"].pop("fake.yaml", None)
    store.repo["algo"].pop("fake_schema.yaml", None)


def test_a_fake_algorithm_registered_once_is_found_everywhere(fake_algorithm):
    cfg = train_config("algo=fake", "algo.lr=0.002")
    assert isinstance(cfg.algo, FakeSettings) and cfg.algo.lr == 0.002  # the schema types and checks it
    assert "fake" in rllib_names() and algorithm("fake") is FAKE
    assert algorithm("fake").trainer_module().__name__ == RLLIB_TRAINER  # the trainer launch/train.py runs
    assert build.main_model_config(cfg)["vf_share_layers"] is False  # its heads
    assert build.snapshot_model_config(cfg)["fake"] is True
    config = build.build_algorithm_config(cfg)  # its RLlib config, its training settings on it
    assert isinstance(config, PPOConfig) and config.entropy_coeff == 0.03 and config.minibatch_size == 64
    assert module_algorithm("fake") is FAKE_MODULE  # the agents layer's entry
    assert module_spec("fake").module_class is MaskedPPOTorchRLModule
    args, _, _ = train_throughput.parse(["--algos", "fake"])  # the benchmark times every RLlib algorithm
    assert args.algos == ["fake"]


def test_a_fake_algorithms_settings_are_range_checked_like_the_others(fake_algorithm):
    with pytest.raises(ValueError, match=r"^algo.lr=0.0 is not allowed: give a number in \(0, 1\]$"):
        train_config("algo=fake", "algo.lr=0")


def test_throughput_against_overrides_compares_the_default_with_them():
    args, both, compared = train_throughput.parse(["--algos", "ppo", "--against", "network=token_set_2x",
                                                   "algo.num_epochs=2", "--seconds", "5", "sampler.games=64"])
    assert args.against == ["network=token_set_2x", "algo.num_epochs=2"] and args.seconds == 5
    assert both == ["sampler.games=64"] and compared == args.against


@pytest.mark.parametrize("argv,words", [
    (["--against"], "--against needs launch/train.py overrides"),
    (["--against", "network=token_set_2x", "--league", "alphastar"], "give it without --league and --per-game"),
])
def test_throughput_against_without_overrides_or_with_another_comparison_is_one_line(argv, words, capsys):
    with pytest.raises(SystemExit) as done:
        train_throughput.parse(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert done.value.code == 2 and len(err) == 1 and words in err[0]
