"""The typed schema of `python launch/train.py`: one dataclass per config group, checked at start-up.

Hydra composes ``conf/config.yaml`` (a defaults list over the groups below)
onto `TrainConfig`, so an unknown key or a value of the wrong type stops the
run before anything starts. `check` then tests what types cannot (names of
encoders, bots, reward kinds; ranges), each failure one line naming the key,
the value and what is allowed. Each algorithm's settings class checks itself
(`CheckedSettings`: a `Range` for every numeric setting, the choices of every
named one, and the checks that link settings), so an algorithm brings its
checks with it.

Groups (``conf/<group>/<choice>.yaml``):

==========  ================================  =========================================
group       schema                            choices
==========  ================================  =========================================
variant     `VariantConfig` (= Rules)          classic, pyludo, quick, ucsd
obs         `ObsConfig`                       egocentric, seed000_raw62, seed000_enc128, seed001_flags60
reward      `RewardSchema` (= RewardConfig) sparse, seed000_dense, potential
network     `NetworkSchema` (= NetworkConfig)  mlp, seed000_qnet, seed001_ann, token_set
algo        `PPOSettings` / `DQNSettings`     ppo, dqn
            `GASettings`, `ImitateSettings`   ga, imitate (seed 001; launch/training/trainers)
            `TDLambdaSettings`                td_lambda (seed 004; launch/training/trainers)
league      `LeagueConfig`                    pfsp, uniform, alphastar
resources   `ResourcesConfig`                 laptop, workstation, cluster_gpu
budget      `BudgetConfig`                    minutes30, steps1m
eval        `EvalConfig`                      panel
checkpoint  `CheckpointConfig`                every10
wandb       `WandbConfig`                     offline
exp         (``# @package _global_`` bundles) dqn_selfplay, ppo_selfplay, smoke, ga_ann, imitate, td_lambda
==========  ================================  =========================================
"""
from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from launch.cli import MAX_GAMES, MAX_PLIES, check_integers
from ludo_env.rewards import RewardConfig
from ludo_env.rules import Rules
from policies.league.league import LeagueSettings
from policies.algorithms import REGISTRY as RLLIB_REGISTRY
from policies.networks import NetworkConfig

# conf/config.yaml's run folder: ``${first_set:${resume},outputs/train/...}`` (a resume writes into its run).
OmegaConf.register_new_resolver("first_set", lambda *values: next((v for v in values if v), None), replace=True)


def _editable_copy(frozen: type, name: str, exclude: tuple[str, ...] = ()) -> type:
    """A mutable dataclass with `frozen`'s fields (less `exclude`), types and defaults: OmegaConf cannot merge
    into a frozen one."""
    types = typing.get_type_hints(frozen)
    specs = []
    for f in dataclasses.fields(frozen):
        if f.name in exclude:
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        if isinstance(default, (list, tuple, dict)):
            specs.append((f.name, types[f.name], field(default_factory=lambda d=default: type(d)(d))))
        else:
            specs.append((f.name, types[f.name], field(default=default)))
    copy = dataclasses.make_dataclass(name, specs)
    copy.__module__ = __name__
    return copy


VariantConfig = _editable_copy(Rules, "VariantConfig")
"""The rules (conf/variant): every field of `ludo_env.rules.Rules`, whose docstrings say what each means."""


RewardSchema = _editable_copy(RewardConfig, "RewardSchema")
"""The reward shaping (conf/reward): every field of `ludo_env.rewards.RewardConfig`."""


NetworkSchema = _editable_copy(NetworkConfig, "NetworkSchema")
"""The network (conf/network): every field of `policies.networks.NetworkConfig`."""


@dataclass
class ObsConfig:
    name: str = "egocentric"
    """Observation encoder (ludo_env.observations): egocentric, seed000_raw62, seed000_enc128, seed001_flags60."""


@dataclass(frozen=True)
class Range:
    """The values a numeric setting allows: ``low``/``high`` (None: unbounded), each end included unless
    ``*_open``; ``null_ok`` lets None (an optional setting that is off). Infinity and NaN are never allowed."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    null_ok: bool = False

    def allows(self, value: Any) -> bool:
        if value is None:
            return self.null_ok
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def text(self) -> str:
        """``a number in (0, 1]``, ``a number >= 1``, ... for the error line."""
        low, high = _bound(self.low), _bound(self.high)
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            words = f"a number in {left}{low}, {high}{right}"
        elif self.low is not None:
            words = f"a number {'>' if self.low_open else '>='} {low}"
        elif self.high is not None:
            words = f"a number {'<' if self.high_open else '<='} {high}"
        else:
            words = "a finite number"
        return words + (" or null" if self.null_ok else "")

    def check(self, key: str, value: Any) -> None:
        if not self.allows(value):
            raise ValueError(f"{key}={value!r} is not allowed: give {self.text()}")


def _bound(value: float | None) -> str:
    if value is None:
        return ""
    if isinstance(value, int) or (value.is_integer() and abs(value) < 1e15):  # 1000000, not 1e+06
        return str(int(value))
    return f"{value:g}"


POSITIVE = Range(0, low_open=True)
MAX_ATOMS = 256
NON_NEGATIVE = Range(0)
AT_LEAST_ONE = Range(1)
SHARE = Range(0, 1)
"""A probability or a mixing weight: [0, 1]."""
LARGEST = 1e6
"""The largest size any reward, coefficient, clip or value bound needs here (rewards are at most 100 a move):
beyond it a setting is a typo (``1e300``) whose overflow would only show as NaN losses mid-run."""
LEARNING_RATE = Range(0, 1, low_open=True)
"""An optimizer's step size, (0, 1]: an Adam step moves every weight by about ``lr``, so above 1 nothing trains."""
COEFFICIENT = Range(0, LARGEST)
"""A loss weight or a noise scale, [0, 1e6]."""
CLIP = Range(0, LARGEST, low_open=True)
"""A clip or a bound that must be positive, (0, 1e6]."""


class CheckedSettings:
    """Settings that check themselves: `RANGES` bounds every numeric field, `CHOICES` every named one; a
    subclass adds what links fields in `check_more`. Every failure is a ValueError of one line naming
    ``<prefix>.<field>``, its value and what is allowed."""

    RANGES: ClassVar[dict[str, Range]] = {}
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {}

    def check(self, prefix: str) -> None:
        for name, allowed in self.RANGES.items():
            allowed.check(f"{prefix}.{name}", getattr(self, name))
        for name, choices in self.CHOICES.items():
            value = getattr(self, name)
            if value not in choices:
                raise ValueError(f"{prefix}.{name}={value!r} is not allowed: choose {' or '.join(choices)}")
        self.check_more(prefix)

    def check_more(self, prefix: str) -> None:
        """Checks across fields; none by default."""


@dataclass
class RLlibSettings(CheckedSettings):
    """What the settings of every RLlib algorithm have; each algorithm's class gives its own defaults."""

    name: str = ""
    """Algorithm; fixed by the file chosen in conf/algo."""
    lr: float = 1e-3
    """Adam learning rate."""
    lr_end: float | None = None
    """Learning rate at the end of the run, reached linearly from `lr` over budget.env_steps (RLlib's lr
    schedule on sampled env steps), then held; None: `lr` throughout. Needs budget.env_steps."""
    gamma: float = 0.99
    """Discount per decision of the same seat; with reward.kind=potential, reward.gamma must be the same."""
    train_batch_size: int = 8192
    """Per learner update, per learner: env steps (PPO) or transitions drawn from the replay buffer (DQN)."""
    grad_clip: float | None = 0.5
    """Global gradient-norm clip; None: off."""

    RANGES: ClassVar[dict[str, Range]] = {
        "lr": LEARNING_RATE, "lr_end": Range(0, 1, null_ok=True), "gamma": SHARE, "train_batch_size": AT_LEAST_ONE,
        "grad_clip": Range(0, LARGEST, low_open=True, null_ok=True),
    }


@dataclass
class PPOSettings(RLlibSettings):
    name: str = "ppo"
    gae_lambda: float = 0.95
    """GAE lambda."""
    minibatch_size: int = 512
    """SGD minibatch."""
    num_epochs: int = 6
    """Passes over each train batch."""
    clip_param: float = 0.2
    """PPO ratio clip."""
    vf_loss_coeff: float = 0.5
    """Weight of the value loss."""
    vf_clip_param: float = 10.0
    """Value-function clip (in reward units)."""
    entropy_coeff: float = 0.01
    """Entropy bonus."""
    kl_coeff: float = 0.0
    """KL penalty (0: clip only)."""
    vf_share_layers: bool = False
    """One trunk for policy and value."""

    RANGES: ClassVar[dict[str, Range]] = {
        **RLlibSettings.RANGES, "gae_lambda": SHARE,
        "minibatch_size": AT_LEAST_ONE, "num_epochs": AT_LEAST_ONE, "clip_param": Range(0, 10, low_open=True),
        "vf_loss_coeff": COEFFICIENT, "vf_clip_param": CLIP, "entropy_coeff": COEFFICIENT, "kl_coeff": COEFFICIENT,
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"name": ("ppo",)}

    def check_more(self, prefix: str) -> None:
        # RLlib refuses this only once the algorithm is built, after Ray has started
        if self.minibatch_size > self.train_batch_size:
            raise ValueError(f"{prefix}.minibatch_size={self.minibatch_size} is not allowed: give a number in "
                             f"[1, {prefix}.train_batch_size={self.train_batch_size}]")


@dataclass
class DQNSettings(RLlibSettings):
    name: str = "dqn"
    lr: float = 5e-4
    train_batch_size: int = 256
    grad_clip: float | None = 10.0
    double_q: bool = True
    """Double Q-learning targets (seed 000)."""
    dueling: bool = True
    """Dueling value/advantage heads."""
    num_atoms: int = 1
    """Atoms of a distributional Q head (C51, Bellemare et al. 2017): each action's return is a categorical
    distribution on `num_atoms` evenly spaced values from `v_min` to `v_max`, trained by cross-entropy to the
    projected n-step target; 1: Q-values are expectations trained by `td_error_loss`. At most 256: RLlib's
    projection holds a batch x atoms x atoms one-hot. On classic it learned far slower than expected Q-values
    (docs/training.md)."""
    v_min: float = -2.0
    """Lowest return the distributional head can represent (num_atoms > 1). With the potential reward a return
    is the end pay (win 1, loss -1/3 at 4 players) minus the seat's progress lead (within [-1, 1])."""
    v_max: float = 2.0
    """Highest return the distributional head can represent (num_atoms > 1)."""
    n_step: int = 3
    """n-step returns."""
    advantage_learning: float = 0.97
    """alpha of the advantage-learning operator (Bellemare et al. 2016; launch/training/dqn_learner.py): the target of
    Q(s, a) loses alpha * (max_b Q'(s, b) - Q'(s, a)), which widens the gaps between actions by 1 / (1 - alpha)
    and keeps the greedy policy; 0: RLlib's own loss. Classic runs' last policies against 3 random and
    3 hybrid: at 0.97 (four runs), 81.8-84.2% and 43.8-44.9%; at 0.9 (four), 82.5-84.1% and 43.2-44.8%;
    twelve without it, 78.0-83.5% and 39.0-43.9% (docs/training.md)."""
    target_network_update_freq: int = 4000
    """Sampled env steps between target-network updates (seed 000: a target network). RLlib checks it after each
    update against the env steps sampled so far, which the batched sampler advances once per sample (16 decisions
    for each of ``sampler.games`` games): at the defaults that is a sync every 8 updates; 32768 (every 64 updates)
    did not train a stronger policy (docs/training.md)."""
    tau: float = 1.0
    """Target update mix; 1.0 copies."""
    replay: str = "prioritized"
    """prioritized or uniform episode replay."""
    buffer_capacity: int = 200_000
    """Replay capacity in env steps."""
    prioritized_alpha: float = 0.6
    """Priority exponent."""
    prioritized_beta: float = 0.4
    """Importance-sampling exponent."""
    epsilon_start: float = 1.0
    """Exploration at the first step."""
    epsilon_end: float = 0.05
    """Exploration after `epsilon_steps`."""
    epsilon_steps: int = 300_000
    """Env steps of the linear epsilon decay (seed 000: epsilon decay)."""
    learning_starts: int = 10_000
    """Env steps sampled before the first update."""
    training_intensity: float | None = 0.5
    """Replayed / sampled env steps (RLlib computes it from rollout_fragment_length); None: one update per sample."""
    rollout_fragment_length: int = 200
    """Env steps per game per sample call as RLlib assumes it; DQN samples whole games, so keep it near the
    mean game length in env steps (classic, 4 players: about 200-230) or training_intensity is off by that ratio."""
    td_error_loss: str = "huber"
    """huber or mse."""
    store_buffer_in_checkpoints: bool = False
    """Save the replay buffer with each checkpoint (large); off: a resumed run refills it."""
    steps_per_iteration: int = 16384
    """Env steps sampled per training iteration (RLlib's min_sample_timesteps_per_iteration): about PPO's batch,
    so eval.every, league.snapshot_every and checkpoint.every (counted in iterations) mean the same for both."""

    RANGES: ClassVar[dict[str, Range]] = {
        **RLlibSettings.RANGES,
        "n_step": AT_LEAST_ONE, "num_atoms": Range(1, MAX_ATOMS), "v_min": Range(-LARGEST, LARGEST),
        "v_max": Range(-LARGEST, LARGEST),
        "advantage_learning": Range(0, 1, high_open=True),
        "target_network_update_freq": AT_LEAST_ONE, "tau": Range(0, 1, low_open=True),
        "buffer_capacity": AT_LEAST_ONE, "prioritized_alpha": Range(0, 10), "prioritized_beta": SHARE,
        "epsilon_start": SHARE, "epsilon_end": SHARE, "epsilon_steps": AT_LEAST_ONE,
        "learning_starts": NON_NEGATIVE, "training_intensity": Range(0, 10_000, low_open=True, null_ok=True),
        "rollout_fragment_length": AT_LEAST_ONE, "steps_per_iteration": AT_LEAST_ONE,
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "name": ("dqn",), "replay": ("prioritized", "uniform"), "td_error_loss": ("huber", "mse"),
    }

    def check_more(self, prefix: str) -> None:
        if self.train_batch_size > self.buffer_capacity:  # a batch is drawn from the buffer
            raise ValueError(f"{prefix}.train_batch_size={self.train_batch_size} is not allowed: give a number in "
                             f"[1, {prefix}.buffer_capacity={self.buffer_capacity}]")
        if self.num_atoms > 1 and not self.v_min < self.v_max:
            raise ValueError(f"{prefix}.v_min={self.v_min:g} and {prefix}.v_max={self.v_max:g} are not allowed: "
                             f"a distributional head (num_atoms={self.num_atoms}) needs v_min < v_max")


@dataclass
class GASettings(CheckedSettings):
    """Seed 001's genetic algorithm over the 60-6-4 sigmoid network (policies/evolution.py,
    launch/training/trainers/ga.py)."""

    name: str = "ga"
    """Algorithm; fixed by the file chosen in conf/algo."""
    population: int = 30
    """Chromosomes per generation (seed 001: 30)."""
    generations: int = 0
    """Generations to evaluate; 0: until the budget (budget.minutes, or budget.iterations as generations)."""
    games: int = 250
    """Fitness games per chromosome per generation (seed 001: 250)."""
    crossover_rate: float = 0.85
    """Chance that a pair of parents is crossed (two-point); else the children copy them (seed 001: 0.85)."""
    mutation_rate: float = 0.45
    """Chance that each gene of a child gets Gaussian noise (seed 001: 0.45)."""
    mutation_sigma: float = 2.0
    """Standard deviation of that noise (seed 001: 2.0)."""
    elitism: float = 0.75
    """Share of the population, the fittest, that survives unchanged into the next generation (seed 001: 0.75)."""
    init: str = "random"
    """random (uniform in [-0.77, 0.77]) or a ga_ann policy path (run, policy folder: an imitation-trained
    network) whose chromosome, plus noise, seeds every member ("prior knowledge")."""
    init_sigma: float = 1.0
    """Standard deviation of the noise added to the init chromosome (seed 001: 1)."""
    opponent: str = "semi_smart"
    """Built-in bot in the other seats of every fitness game (seed 001: Semi-Smart)."""
    common_dice: bool = False
    """Every chromosome of a generation rolls the same dice streams (common random numbers); false: each its own."""
    tasks: int = 0
    """Ray tasks per generation, each a chunk of the population; 0: one per CPU Ray has."""
    population_every: int = 5
    """Generations between saves of the whole population and the GA's random state (what a resume restarts from)."""
    select_games: int = 2000
    """At the end, the best chromosome so far and the final population play this many fresh fitness games each,
    and the fittest of those becomes the policy: the best of many 250-game samples is mostly the luckiest.
    0: keep the best single sample (the paper's choice)."""
    seed: int | None = None
    """Seed of the GA's random choices and of the fitness games; None: the run's seed."""

    RANGES: ClassVar[dict[str, Range]] = {
        "population": Range(2), "generations": NON_NEGATIVE, "games": AT_LEAST_ONE, "crossover_rate": SHARE,
        "mutation_rate": SHARE, "mutation_sigma": COEFFICIENT, "init_sigma": COEFFICIENT, "tasks": NON_NEGATIVE,
        "population_every": AT_LEAST_ONE, "select_games": NON_NEGATIVE, "seed": Range(0, null_ok=True),
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"name": ("ga",)}

    def check_more(self, prefix: str) -> None:
        from policies.bots import BOT_NAMES

        Range(0, 1 - 1 / self.population).check(f"{prefix}.elitism", self.elitism)  # at least one child
        if self.opponent not in BOT_NAMES:
            raise ValueError(f"{prefix}.opponent: unknown bot {self.opponent!r}: choose from {', '.join(BOT_NAMES)}")
        if self.init != "random" and not Path(self.init).exists():
            raise ValueError(f"{prefix}.init={self.init!r}: no such path: give random or a ga_ann policy "
                             "(run or policy folder)")


@dataclass
class ImitateSettings(CheckedSettings):
    """Supervised learning of seed 001's 60-6-4 sigmoid network from game records
    (launch/training/trainers/imitate.py)."""

    name: str = "imitate"
    """Algorithm; fixed by the file chosen in conf/algo."""
    records: list[str] = field(default_factory=list)
    """JSONL record files (policies.records): launch/play.py record=, launch/evaluate.py record=."""
    lr: float = 0.7
    """Learning rate of full-batch gradient descent (seed 001 with FANN: 0.7)."""
    epochs: int = 20_000
    """Most full-batch epochs."""
    target_mse: float = 0.01
    """Stop once the training MSE is below this (seed 001: 0.01)."""
    validation: float = 0.2
    """Share of the recorded games held out for validation (whole games)."""
    skip_forced: bool = False
    """Leave out decisions with a single legal token."""
    log_every: int = 500
    """Epochs between metric rows."""
    seed: int | None = None
    """Seed of the initial weights and of the validation split; None: the run's seed."""

    RANGES: ClassVar[dict[str, Range]] = {
        # full-batch gradient descent on a sigmoid net (FANN's 0.7), not Adam: steps above 1 can still train
        "lr": Range(0, 100, low_open=True), "epochs": AT_LEAST_ONE, "target_mse": SHARE,
        "validation": Range(0, 0.9),
        "log_every": AT_LEAST_ONE, "seed": Range(0, null_ok=True),
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"name": ("imitate",)}

    def check_more(self, prefix: str) -> None:
        if not self.records:
            raise ValueError(f"{prefix}.records is empty: give record files, e.g. {prefix}.records=[records.jsonl]")
        for file in self.records:
            if not Path(file).is_file():
                raise ValueError(f"{prefix}.records: no such file {file!r}")


@dataclass
class TDLambdaSettings(CheckedSettings):
    """Seed 004's TD(lambda) afterstate value, learned by batched self-play (policies/td_lambda.py,
    launch/training/trainers/td_lambda.py)."""

    name: str = "td_lambda"
    """Algorithm; fixed by the file chosen in conf/algo."""
    value: str = "linear"
    """linear (w . features) or mlp (sigmoid of a ReLU MLP over the same features)."""
    method: str = "td_lambda"
    """td_lambda (accumulating traces) or true_online (true online TD(lambda); linear only)."""
    lam: float = 0.8
    """Trace decay lambda in [0, 1] (0: TD(0))."""
    alpha: float | None = None
    """Step size of the mean update over games; None: 0.05 for linear, 2.0 for mlp."""
    gamma: float = 1.0
    """Discount per decision (any seat's) in the afterstate chain."""
    epsilon: float = 0.02
    """Chance of a uniformly random legal move instead of the greedy one."""
    games: int = 256
    """Self-play games stepped together (each batched step is this many env steps)."""
    hidden: list[int] = field(default_factory=lambda: [64, 64])
    """Hidden layer sizes of the mlp value."""
    steps_per_iteration: int = 200
    """Batched steps per iteration (metrics row, checkpoint and evaluation cadence)."""
    seed: int | None = None
    """Seed of the self-play dice, the exploration and the mlp's initial weights; None: the run's seed."""

    RANGES: ClassVar[dict[str, Range]] = {
        "lam": SHARE, "alpha": Range(0, 1000, low_open=True, null_ok=True), "gamma": SHARE, "epsilon": SHARE,
        "games": AT_LEAST_ONE, "steps_per_iteration": AT_LEAST_ONE, "seed": Range(0, null_ok=True),
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "name": ("td_lambda",), "value": ("linear", "mlp"), "method": ("td_lambda", "true_online"),
    }

    def check_more(self, prefix: str) -> None:
        if self.method == "true_online" and self.value != "linear":
            raise ValueError(f"{prefix}.method=true_online needs {prefix}.value=linear: "
                             f"use {prefix}.method=td_lambda for the mlp")
        for size in self.hidden:
            AT_LEAST_ONE.check(f"{prefix}.hidden", size)


RLLIB_ALGOS = tuple(RLLIB_REGISTRY)
"""Algorithms RLlib trains; every other `algo.name` runs its own loop, ``launch/training/trainers/<name>.py``."""
ALGO_SCHEMAS: dict[str, type] = {"ppo": PPOSettings, "dqn": DQNSettings, "ga": GASettings,
                                 "imitate": ImitateSettings, "td_lambda": TDLambdaSettings}


LeagueConfig = _editable_copy(LeagueSettings, "LeagueConfig", exclude=("players", "with_main"))
"""The league (conf/league): the fields of `policies.league.league.LeagueSettings`, whose docstrings say what
each means; the player count comes from the variant."""


@dataclass
class ResourcesConfig:
    env_runners: int = 1
    """Remote EnvRunner actors; 0 samples in the driver."""
    envs_per_runner: int = 16
    """Games each EnvRunner steps together (at least 8 for throughput)."""
    cpus_per_env_runner: float = 1.0
    """CPUs Ray reserves per EnvRunner."""
    learners: int = 0
    """Remote learner actors; 0 learns in the driver."""
    gpus_per_learner: str = "auto"
    """auto (1 when torch sees a GPU, else 0), or a number."""
    compile_learner: bool = False
    """torch.compile the learner's update (RLlib's torch_compile_learner, inductor): compiles for a minute or
    more at the start, so it pays only on long runs and mostly on a GPU; off by default."""
    ray_address: str | None = None
    """Ray cluster to join (HOST:PORT or auto); None: RAY_ADDRESS or a `ray start` here, else a new one."""


SAMPLERS = ("batched", "per_game")
"""How EnvRunners play: `launch.training.sampler.BatchedLudoEnvRunner` over a batch of numba games, or RLlib's
`MultiAgentEnvRunner` stepping ``resources.envs_per_runner`` one-game `LudoMultiAgentEnv` copies."""


@dataclass
class SamplerConfig:
    name: str = "batched"
    """batched (B games per EnvRunner in the numba engine, one forward pass per agent per step) or per_game
    (RLlib steps one-game envs; the pre-batched path, kept for comparison: benchmarks/train_throughput.py)."""
    games: int = 256
    """batched: games each EnvRunner plays at once (B); see docs/training.md for the measurement."""
    prefetch: bool = True
    """batched, remote EnvRunners: play the next sample while the learner trains on this one, so an iteration
    takes the longer of the two rather than their sum. The sample the learner gets was then played by the
    weights one update old (PPO's ratio uses the logits it was played with)."""


@dataclass
class BudgetConfig:
    minutes: float = 30.0
    """Wall-clock training time, resumed runs included; 0: no limit."""
    env_steps: int = 0
    """Env steps sampled; 0: no limit."""
    iterations: int = 0
    """Training iterations; 0: no limit."""


@dataclass
class EvalConfig:
    every: int = 10
    """Iterations between evaluations; 0: only at the end."""
    games: int = 1000
    """Games per opponent during training."""
    final_games: int = 5000
    """Games per opponent at the end."""
    panel: list[str] = field(default_factory=lambda: ["random", "hybrid"])
    """Opponents: greedy main plays against players-1 copies of each (player specs)."""
    seed: int = 1_000_003
    """Dice seed of the evaluation games (the same games every time)."""
    threads: int = 0
    """Threads playing the panel games at once (`policies.tournament`, Threads); 0: one per core. Evaluations
    run between training iterations, when the learner waits; the results do not depend on it."""


@dataclass
class CheckpointConfig:
    every: int = 10
    """Iterations between checkpoints; the last iteration is always saved."""
    keep: int = 3
    """Checkpoints kept on disk (newest)."""


@dataclass
class WandbConfig:
    mode: str = "offline"
    """offline, online or disabled (WANDB_MODE in the environment wins)."""
    project: str = "ludo-league"
    """wandb project."""
    entity: str | None = None
    """wandb entity (team); None: the default."""
    group: str | None = None
    """Run group."""
    tags: list[str] = field(default_factory=list)
    """Run tags."""
    log_checkpoint: bool = True
    """Log the final checkpoint's policy as an artifact."""


@dataclass
class TrainConfig:
    variant: VariantConfig = field(default_factory=VariantConfig)  # type: ignore[valid-type]
    """The rules (conf/variant); players is variant.players."""
    obs: ObsConfig = field(default_factory=ObsConfig)
    reward: RewardSchema = field(default_factory=RewardSchema)  # type: ignore[valid-type]
    network: NetworkSchema = field(default_factory=NetworkSchema)  # type: ignore[valid-type]
    algo: Any = MISSING
    """PPOSettings or DQNSettings (conf/algo); or the settings of a loop in launch/training/trainers (GASettings,
    ...)."""
    league: LeagueConfig = field(default_factory=LeagueConfig)
    resources: ResourcesConfig = field(default_factory=ResourcesConfig)
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    wandb: WandbConfig = field(default_factory=WandbConfig)
    name: str = "selfplay"
    """Run name (wandb, summary)."""
    seed: int = 0
    """Seed of everything: torch, the env seeds, the matchmaker."""
    max_plies: int = 2000
    """Turn limit of a training game in die rolls."""
    auto_forced_moves: bool = True
    """Play single-choice decisions inside the env."""
    resume: str | None = None
    """A run folder to continue from its last good checkpoint."""
    resume_trust_unsigned: bool = False
    """Resume from a checkpoint this user's key did not sign (a run from before checkpoints were signed), and sign
    it: only for a run folder you wrote yourself (launch.training.runs, signed checkpoints)."""
    run_dir: str = MISSING
    """Where checkpoints, wandb and the summary go (the Hydra output folder)."""
    progress: bool = True
    """Print one line per iteration."""


def register() -> None:
    store = ConfigStore.instance()
    store.store(name="train_schema", node=TrainConfig)
    for name, schema in ALGO_SCHEMAS.items():
        store.store(group="algo", name=f"{name}_schema", node=schema)


register()


def check(cfg: TrainConfig) -> None:
    """What the types cannot say, group by group; raises ValueError with one line."""
    from ludo_env.observations import check_encoder

    check_encoder(cfg.obs.name)
    Rules.load(dataclasses.asdict(cfg.variant))
    RewardConfig.load(dataclasses.asdict(cfg.reward))
    for key, allowed in REWARD_RANGES.items():
        allowed.check(f"reward.{key}", getattr(cfg.reward, key))
    NetworkConfig.load(dataclasses.asdict(cfg.network)).check()
    if cfg.algo.name not in ALGO_SCHEMAS or not isinstance(cfg.algo, CheckedSettings):
        raise ValueError(f"algo.name={cfg.algo.name!r} is not allowed: choose {' or '.join(ALGO_SCHEMAS)}")
    cfg.algo.check("algo")  # each algorithm's settings carry their own ranges
    check_league(cfg)
    check_resources(cfg.resources)
    if cfg.sampler.name not in SAMPLERS:
        raise ValueError(f"sampler.name={cfg.sampler.name!r} is not allowed: choose {' or '.join(SAMPLERS)}")
    Range(1, MAX_SAMPLER_GAMES).check("sampler.games", cfg.sampler.games)
    check_budget(cfg.budget)
    if (cfg.reward.kind == "potential" and isinstance(cfg.algo, (PPOSettings, DQNSettings))
            and cfg.reward.gamma != cfg.algo.gamma):
        raise ValueError(f"reward.gamma={cfg.reward.gamma:g} is not allowed with algo.gamma={cfg.algo.gamma:g}: "
                         f"potential shaping keeps the best policy only at the learner's discount; "
                         f"set reward.gamma={cfg.algo.gamma:g}")
    if getattr(cfg.algo, "lr_end", None) is not None and not cfg.budget.env_steps:
        raise ValueError(f"algo.lr_end={cfg.algo.lr_end!r} needs budget.env_steps, where its decay ends: "
                         "set budget.env_steps or algo.lr_end=null")
    for key, allowed in EVAL_RANGES.items():
        allowed.check(f"eval.{key}", getattr(cfg.eval, key))
    if not cfg.eval.panel:  # every evaluation, the best policy's score and the league's panels are over it
        raise ValueError("eval.panel=[] is not allowed: give at least one opponent, e.g. eval.panel=[random]")
    AT_LEAST_ONE.check("checkpoint.every", cfg.checkpoint.every)
    AT_LEAST_ONE.check("checkpoint.keep", cfg.checkpoint.keep)
    if cfg.wandb.mode not in ("offline", "online", "disabled"):
        raise ValueError(f"wandb.mode={cfg.wandb.mode!r} is not allowed: choose offline, online or disabled")
    NON_NEGATIVE.check("seed", cfg.seed)
    Range(1, MAX_PLIES).check("max_plies", cfg.max_plies)
    check_integers(cfg)  # what no range above bounds: every other integer within 64 bits, seeds >= 0


REWARD_RANGES = {"win": Range(-LARGEST, LARGEST), "loss": Range(-LARGEST, LARGEST, null_ok=True),
                 "enter": Range(-LARGEST, LARGEST), "capture": Range(-LARGEST, LARGEST),
                 "token_home": Range(-LARGEST, LARGEST), "progress": Range(-LARGEST, LARGEST), "coef": COEFFICIENT,
                 "gamma": Range(0, 1, low_open=True)}
"""reward.<key>: its allowed values; `ludo_env.rewards.RewardConfig` checks the kinds, this the sizes."""

EVAL_RANGES = {"every": NON_NEGATIVE, "games": Range(1, MAX_GAMES), "final_games": Range(0, MAX_GAMES),
               "seed": NON_NEGATIVE, "threads": Range(0, 256)}
"""eval.<key>: its allowed values (eval.panel, player specs, is checked by launch/train.py before Ray starts)."""


def check_league(cfg: TrainConfig) -> None:
    from policies.bots import BOT_NAMES
    from policies.league.ratings import PFSP_WEIGHTINGS

    league = cfg.league
    for bot in league.bots:
        if bot not in BOT_NAMES:
            raise ValueError(f"league.bots: unknown bot {bot!r}: choose from {', '.join(BOT_NAMES)}")
    for key in ("main_weight", "snapshot_weight", "bot_weight", "external_weight"):
        Range(0, LARGEST).check(f"league.{key}", getattr(league, key))  # NaN would pass the test below
    weights = (league.main_weight, league.snapshot_weight, league.bot_weight)
    if min(weights) < 0 or sum(weights) <= 0:
        raise ValueError("league weights must be >= 0 and not all 0 (main_weight, snapshot_weight, bot_weight)")
    for bot in league.rated_bots:
        if bot not in BOT_NAMES:
            raise ValueError(f"league.rated_bots: unknown bot {bot!r}: choose from {', '.join(BOT_NAMES)}")
    if league.pfsp not in PFSP_WEIGHTINGS:
        raise ValueError(f"league.pfsp={league.pfsp!r} is not allowed: choose {', '.join(PFSP_WEIGHTINGS)}")
    if league.snapshot_win_rate is not None and not 0 < league.snapshot_win_rate <= 1:
        raise ValueError(f"league.snapshot_win_rate={league.snapshot_win_rate!r} is not allowed: "
                         "give a share in (0, 1] or null")
    _at_least("league.snapshot_every", league.snapshot_every, 1)
    _at_least("league.max_snapshots", league.max_snapshots, 0)
    _at_least("league.pfsp_rounds", league.pfsp_rounds, 1)
    _at_least("league.lineups", league.lineups, 1)
    _at_least("league.games_per_lineup", league.games_per_lineup, 1)
    members = 1 + len(set(league.rated_bots) | set(league.bots)) + len(league.external)
    if members < cfg.variant.players:
        raise ValueError(f"the league has {members} members without snapshots, fewer than the "
                         f"{cfg.variant.players} seats of a rating round: add league.rated_bots")
    check_exploiters(cfg)


MAX_EXPLOITERS = 64
"""Exploiters of one role: each is a trainable module on the learner and a forward pass per sampler step."""


def check_exploiters(cfg: TrainConfig) -> None:
    """The AlphaStar roles (league=alphastar): counts, shares of the games, freeze and reset rules."""
    league = cfg.league
    for role in ("main_exploiter", "league_exploiter"):
        count, share = getattr(league, f"{role}s"), getattr(league, f"{role}_share")
        Range(0, MAX_EXPLOITERS).check(f"league.{role}s", count)
        Range(0, 1).check(f"league.{role}_share", share)
        if count and not share:
            raise ValueError(f"league.{role}s={count} with league.{role}_share=0 gives them no games: "
                             f"set league.{role}_share, e.g. 0.2")
        if share and not count:
            raise ValueError(f"league.{role}_share={share:g} gives games to {role}s, but league.{role}s=0: "
                             f"set league.{role}s or league.{role}_share=0")
        games = cfg.sampler.games if cfg.sampler.name == "batched" else cfg.resources.envs_per_runner
        if count and share * games < count:
            raise ValueError(f"league.{role}s={count} is too many for league.{role}_share={share:g} of the "
                             f"sampler.games={games} games of an EnvRunner: each needs a game at least; "
                             f"lower league.{role}s or raise the share or sampler.games")
    shares = league.main_exploiter_share + league.league_exploiter_share
    if shares >= 1:
        raise ValueError(f"league.main_exploiter_share + league.league_exploiter_share = {shares:g} leaves main "
                         "no games: the exploiters' shares must add up to less than 1")
    Range(0, 1).check("league.main_exploiter_snapshot_weight", league.main_exploiter_snapshot_weight)
    Range(0, 1, low_open=True).check("league.exploiter_freeze_ahead", league.exploiter_freeze_ahead)
    _at_least("league.exploiter_min_games", league.exploiter_min_games, 1)
    _at_least("league.exploiter_step_budget", league.exploiter_step_budget, 1)
    Range(0, 1).check("league.league_exploiter_reset", league.league_exploiter_reset)
    if not (league.main_exploiters or league.league_exploiters):
        return
    if cfg.algo.name != "ppo":
        raise ValueError(f"exploiters (league.main_exploiters, league.league_exploiters) train with algo=ppo "
                         f"only: algo={cfg.algo.name}'s replay keeps main's decisions alone")
    if cfg.sampler.name != "batched":
        raise ValueError("exploiters (league.main_exploiters, league.league_exploiters) need "
                         "sampler.name=batched, which records each learner's own games")
    if league.max_snapshots < 1:
        raise ValueError("exploiters are frozen into the league's snapshot slots, and league.max_snapshots=0 "
                         "has none: set league.max_snapshots >= 1")


def check_resources(res: ResourcesConfig) -> None:
    _at_least("resources.env_runners", res.env_runners, 0)
    _at_least("resources.envs_per_runner", res.envs_per_runner, 1)
    Range(0, MAX_CPUS).check("resources.cpus_per_env_runner", res.cpus_per_env_runner)
    _at_least("resources.learners", res.learners, 0)
    parse_gpus(res.gpus_per_learner)


def check_budget(budget: BudgetConfig) -> None:
    for key in ("env_steps", "iterations"):
        _at_least(f"budget.{key}", getattr(budget, key), 0)
    Range(0, MAX_MINUTES).check("budget.minutes", budget.minutes)
    if not (budget.minutes or budget.env_steps or budget.iterations):
        raise ValueError("the budget is unlimited: set budget.minutes, budget.env_steps or budget.iterations")


MAX_CPUS = 1024
"""CPUs one EnvRunner may reserve: more than any node has."""
MAX_GPUS = 64
"""GPUs one learner may reserve: more than any node has."""
MAX_MINUTES = 10 * 365 * 24 * 60
"""Ten years: a longer budget.minutes is a typo; 0 is no limit."""

MAX_SAMPLER_GAMES = 65536
"""Games one EnvRunner may hold: about 2 GB of engine rows, records and observations at the largest encoder."""


def _at_least(key: str, value: float, low: float) -> None:
    Range(low).check(key, value)


def parse_gpus(value: str) -> float | None:
    """``gpus_per_learner``: None for auto, else the number (>= 0)."""
    if str(value).strip().lower() == "auto":
        return None
    refused = f"resources.gpus_per_learner={value!r} is not allowed: give auto or a number in [0, {MAX_GPUS}]"
    try:
        gpus = float(value)
    except ValueError:
        raise ValueError(refused) from None
    if not Range(0, MAX_GPUS).allows(gpus):  # float() takes "nan" and "inf"
        raise ValueError(refused)
    return gpus
