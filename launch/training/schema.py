"""The typed schema of `python launch/train.py`: one dataclass per config group, checked at start-up.

Hydra composes ``conf/config.yaml`` (a defaults list over the groups below)
onto `TrainConfig`, so an unknown key or a value of the wrong type stops the
run before anything starts. `check` then tests what types cannot (names of
encoders, bots, reward kinds; ranges), each failure one line naming the key,
the value and what is allowed. Each algorithm's settings class checks itself
(`CheckedSettings`: a `Range` for every numeric setting, the choices of every
named one, and the checks that link settings), so an algorithm brings its
checks with it.

Groups (``conf/<group>/<choice>.yaml``), which ``tests/launch/test_config_tree.py`` holds to the ``conf/`` tree
(every group listed here, no other). A group's choices are its files, listed nowhere by hand: the docs site's
train reference shows each with its description.

| group | schema |
| --- | --- |
| variant | `VariantConfig` (= `ludo_env.rules.Rules`) |
| obs | `ObsConfig` |
| reward | `RewardSchema` (= `ludo_env.rewards.RewardConfig`) |
| network | `NetworkSchema` (= `policies.networks.NetworkConfig`) |
| algo | each algorithm's settings class (`launch.training.algorithms`) |
| league | `LeagueConfig` (= `policies.league.league.LeagueSettings` and the roles' settings) |
| resources | `ResourcesConfig` |
| budget | `BudgetConfig` |
| wandb | `WandbConfig` |
| exp | (``# @package _global_`` bundles, added as ``+exp=<choice>``) |

`sampler` (`SamplerConfig`), `eval` (`EvalConfig`), `checkpoint` (`CheckpointConfig`) and `upkeep`
(`UpkeepConfig`) have no ``conf/`` group:
their keys are set one by one (``eval.games=2000``). Hydra's own ``hydra/launcher`` group (``conf/hydra/launcher``:
slurm) runs ``-m`` sweeps as SLURM jobs. Every key of every group, with its default and what it means, is on the
docs site's train reference, generated from this module and ``conf/``.
"""
from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from launch.cli import MAX_GAMES, MAX_PLIES, check_integers
from launch.training.algorithms import REGISTRY as ALGORITHMS
from launch.training.algorithms import rllib_names
from launch.training.settings import (
    AT_LEAST_ONE,
    COEFFICIENT,
    LARGEST,
    NON_NEGATIVE,
    CheckedSettings,
    Range,
    RLlibSettings,
)
from ludo_env.rewards import RewardConfig
from ludo_env.rules import Rules
from policies.league import roles
from policies.league.league import LeagueSettings
from policies.league.ratings import PFSP_WEIGHTINGS
from policies.networks import NetworkConfig

# conf/config.yaml's run folder: ``${first_set:${resume},outputs/train/...}`` (a resume writes into its run).
OmegaConf.register_new_resolver("first_set", lambda *values: next((v for v in values if v), None), replace=True)


def _editable_copy(frozen: type, name: str, exclude: tuple[str, ...] = (),
                   more: tuple[tuple[str, type, Any], ...] = ()) -> type:
    """A mutable dataclass with `frozen`'s fields (less `exclude`), types and defaults, then `more` fields (name,
    type, default): OmegaConf cannot merge into a frozen one."""
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
    specs += [(key, kind, field(default=default)) for key, kind, default in more]
    copy = dataclasses.make_dataclass(name, specs)
    copy.__module__ = __name__
    for declared in ("CHOICES", "ALLOWED"):  # what the frozen class checks, which the docs' reference shows
        if hasattr(frozen, declared):
            setattr(copy, declared, getattr(frozen, declared))
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
    """Observation encoder: a name of `ludo_env.observations.REGISTRY` (the ``obs`` row of the table above)."""

    ALLOWED: ClassVar[dict[str, str]] = {"name": "an encoder of `ludo_env.observations.REGISTRY` (`check_encoder`)"}


def league_config(settings: type) -> type:
    """The league group's schema for the role table as it is: the fields of `settings` (`LeagueSettings`, less the
    player count, which comes from the variant) and every role's settings (`policies.league.roles.settings`), each
    a field of its own (``league.main_exploiters``) at its default. Its ``RANGES`` and ``CHOICES`` are what the
    settings allow and ``FIELD_DOCS`` what they mean, which the docs' reference reads; the same table gives the
    same class."""
    return _league_config(settings, tuple(roles.settings().values()))


@functools.cache
def _league_config(settings: type, role_settings: tuple[roles.Setting, ...]) -> type:
    copy = _editable_copy(settings, "LeagueConfig", exclude=("players", "with_main", "role_settings"),
                          more=tuple((s.key, s.type, s.default) for s in role_settings))
    copy.RANGES = {s.key: s.allowed for s in role_settings if isinstance(s.allowed, Range)}
    copy.CHOICES = {s.key: s.allowed for s in role_settings if not isinstance(s.allowed, Range)}
    copy.FIELD_DOCS = {s.key: s.doc for s in role_settings}
    copy.ALLOWED = {key: "built-in bot names (`policies.bots.BOT_NAMES`)" for key in ("bots", "rated_bots")}
    return copy


LeagueConfig = league_config(LeagueSettings)
"""The league (conf/league): the fields of `policies.league.league.LeagueSettings`, whose docstrings say what
each means, and the roles' settings (`policies.league.roles`); `register` makes it again for the table as it is
then, so a role added to the table is in the schema."""


MAX_GPUS = 64
"""GPUs one learner may reserve: more than any node has."""


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

    ALLOWED: ClassVar[dict[str, str]] = {"gpus_per_learner": f"auto or a number in [0, {MAX_GPUS}]"}
    """What `parse_gpus` takes; the other keys' ranges are `RESOURCES_RANGES`."""


SAMPLERS = ("batched", "per_game")
"""How EnvRunners play: `launch.training.sampler.BatchedLudoEnvRunner` over a batch of numba games, or RLlib's
`MultiAgentEnvRunner` stepping ``resources.envs_per_runner`` one-game `LudoMultiAgentEnv` copies."""


@dataclass
class SamplerConfig:
    name: str = "batched"
    """batched (B games per EnvRunner in the numba engine, one forward pass per agent per step) or per_game
    (RLlib steps one-game envs; the pre-batched path, kept for comparison: benchmarks/train_throughput.py)."""
    games: int = 256
    """batched: games each EnvRunner plays at once (B): enough rows for the forward passes to be matrix work; larger
    only costs memory (docs/pages/concepts/training.md, "Defaults and why")."""
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
    run beside training, in the league's worker (``upkeep.background``), or between iterations while the
    learner waits; the results do not depend on it."""

    ALLOWED: ClassVar[dict[str, str]] = {"panel": "player specs, at least one"}
    """eval.panel's check (`check`, and the specs by launch/train.py); the numbers' ranges are `EVAL_RANGES`."""


@dataclass
class CheckpointConfig:
    every: int = 10
    """Iterations between checkpoints; the last iteration is always saved."""
    keep: int = 3
    """Checkpoints kept on disk (newest)."""


@dataclass
class UpkeepConfig:
    background: bool = True
    """RLlib trainers: play the league's panel evaluations and rating rounds in a worker beside training (a Ray
    actor at the EnvRunners' niceness) and write checkpoints in a thread, each from a copy taken between two
    iterations, so training waits for none of them (docs/pages/concepts/upkeep.md). false: every job runs on the training
    path and is waited for, as runs did before (benchmarks/train_throughput.py --end-to-end compares them)."""


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
    """The settings class of ``algo.name`` (conf/algo), declared with the algorithm in `launch.training.algorithms`."""
    league: LeagueConfig = field(default_factory=lambda: LeagueConfig())  # the one `register` made last
    resources: ResourcesConfig = field(default_factory=ResourcesConfig)
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    upkeep: UpkeepConfig = field(default_factory=UpkeepConfig)
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
    init: str | None = None
    """A saved policy (a policy, checkpoint or run folder, as ``ckpt:`` takes them) whose weights main starts from
    (PPO, DQN): it must be of this run's algorithm, encoder, network, player count and variant, else the run is
    refused before Ray starts; None: fresh weights. A resume ignores it: the checkpoint's main wins."""
    resume_trust_unsigned: bool = False
    """Resume from a checkpoint this user's key did not sign (a run from before checkpoints were signed), and sign
    it: only for a run folder you wrote yourself (launch.training.runs, signed checkpoints)."""
    run_dir: str = MISSING
    """Where checkpoints, wandb and the summary go (the Hydra output folder)."""
    progress: bool = True
    """Print one line per iteration."""


def register() -> None:
    """Hydra's config store: `TrainConfig`, with the league group for the role table as it is now, and each
    algorithm's settings."""
    global LeagueConfig
    LeagueConfig = league_config(LeagueSettings)
    store = ConfigStore.instance()
    store.store(name="train_schema", node=TrainConfig)
    for name, algorithm in ALGORITHMS.items():
        store.store(group="algo", name=f"{name}_schema", node=algorithm.settings)


register()


def check(cfg: TrainConfig) -> None:
    """What the types cannot say, group by group; raises ValueError with one line."""
    from ludo_env.observations import check_encoder

    check_encoder(cfg.obs.name)
    Rules.load(dataclasses.asdict(cfg.variant))
    RewardConfig.load(dataclasses.asdict(cfg.reward))
    check_group("reward", cfg.reward)
    NetworkConfig.load(dataclasses.asdict(cfg.network)).check()
    if cfg.algo.name not in ALGORITHMS or not isinstance(cfg.algo, CheckedSettings):
        raise ValueError(f"algo.name={cfg.algo.name!r} is not allowed: choose {' or '.join(ALGORITHMS)}")
    cfg.algo.check("algo")  # each algorithm's settings carry their own ranges
    if cfg.init is not None and cfg.algo.name not in rllib_names():
        raise ValueError(f"init={cfg.init} starts an RLlib algorithm's main ({', '.join(rllib_names())}), not "
                         f"algo={cfg.algo.name}: drop init")
    check_league(cfg)
    check_resources(cfg.resources)
    check_group("sampler", cfg.sampler)
    check_budget(cfg.budget)
    if (cfg.reward.kind == "potential" and isinstance(cfg.algo, RLlibSettings)
            and cfg.reward.gamma != cfg.algo.gamma):
        raise ValueError(f"reward.gamma={cfg.reward.gamma:g} is not allowed with algo.gamma={cfg.algo.gamma:g}: "
                         f"potential shaping keeps the best policy only at the learner's discount; "
                         f"set reward.gamma={cfg.algo.gamma:g}")
    for key in SCHEDULED:
        end = getattr(cfg.algo, key, None)
        if end is not None and not (cfg.budget.env_steps or getattr(cfg.algo, "schedule_env_steps", None)):
            raise ValueError(f"algo.{key}={end!r} needs budget.env_steps (or algo.schedule_env_steps), where its "
                             f"schedule ends: set one, or algo.{key}=null")
    check_group("eval", cfg.eval)
    if not cfg.eval.panel:  # every evaluation, the best policy's score and the league's panels are over it
        raise ValueError("eval.panel=[] is not allowed: give at least one opponent, e.g. eval.panel=[random]")
    check_group("checkpoint", cfg.checkpoint)
    check_group("wandb", cfg.wandb)
    for key, allowed in TOP_RANGES.items():
        allowed.check(key, getattr(cfg, key))
    check_integers(cfg)  # what no range above bounds: every other integer within 64 bits, seeds >= 0


SCHEDULED = ("lr_end", "entropy_coeff_end")
"""algo.<key>: the end values of linear schedules over env steps (`launch.training.algorithms.base.linear_schedule`)."""

REWARD_RANGES = {"win": Range(-LARGEST, LARGEST), "loss": Range(-LARGEST, LARGEST, null_ok=True),
                 "enter": Range(-LARGEST, LARGEST), "capture": Range(-LARGEST, LARGEST),
                 "token_home": Range(-LARGEST, LARGEST), "progress": Range(-LARGEST, LARGEST), "coef": COEFFICIENT,
                 "gamma": Range(0, 1, low_open=True)}
"""reward.<key>: its allowed values; `ludo_env.rewards.RewardConfig` checks the kinds, this the sizes."""

EVAL_RANGES = {"every": NON_NEGATIVE, "games": Range(1, MAX_GAMES), "final_games": Range(0, MAX_GAMES),
               "seed": NON_NEGATIVE, "threads": Range(0, 256)}
"""eval.<key>: its allowed values (eval.panel, player specs, is checked by launch/train.py before Ray starts)."""

SAMPLER_RANGES = {"games": Range(1, 65536)}
"""sampler.<key>: games one EnvRunner may hold, at most about 2 GB of engine rows, records and observations at the
largest encoder."""
SAMPLER_CHOICES = {"name": SAMPLERS}
CHECKPOINT_RANGES = {"every": AT_LEAST_ONE, "keep": AT_LEAST_ONE}
WANDB_CHOICES = {"mode": ("offline", "online", "disabled")}
TOP_RANGES = {"seed": NON_NEGATIVE, "max_plies": Range(1, MAX_PLIES)}
"""The top-level keys' allowed values."""


def check_group(group: str, settings: Any) -> None:
    """The group's declared ``<GROUP>_RANGES`` and ``<GROUP>_CHOICES`` (this module's tables, which the docs'
    reference shows beside each key): ValueError of one line naming the first key that is not allowed."""
    for key, allowed in globals().get(f"{group.upper()}_RANGES", {}).items():
        allowed.check(f"{group}.{key}", getattr(settings, key))
    for key, choices in globals().get(f"{group.upper()}_CHOICES", {}).items():
        value = getattr(settings, key)
        if value not in choices:
            raise ValueError(f"{group}.{key}={value!r} is not allowed: choose {', '.join(choices[:-1])} or "
                             f"{choices[-1]}")


def check_league(cfg: TrainConfig) -> None:
    from policies.bots import BOT_NAMES

    league = cfg.league
    for bot in league.bots:
        if bot not in BOT_NAMES:
            raise ValueError(f"league.bots: unknown bot {bot!r}: choose from {', '.join(BOT_NAMES)}")
    check_group("league", league)  # first: NaN weights would pass the test below
    # external_weight counts only when there are externals: the matchmaker leaves out the share of an empty group
    if not league.main_weight + league.snapshot_weight + league.bot_weight:
        if not league.external_weight:
            raise ValueError("league weights are all 0: give main_weight, snapshot_weight, bot_weight or, with "
                             "league.external, external_weight a share > 0")
        if not league.external:
            raise ValueError(f"league.external_weight={league.external_weight:g} is the only share > 0 and "
                             "league.external is empty: name the external members (league.external=[<run or policy "
                             "folder>]) or give main_weight, snapshot_weight or bot_weight a share")
        if cfg.sampler.name != "batched":
            raise ValueError(f"league.external_weight is the only share > 0 and sampler.name={cfg.sampler.name}: "
                             "external members sit at training seats only with sampler.name=batched")
    for bot in league.rated_bots:
        if bot not in BOT_NAMES:
            raise ValueError(f"league.rated_bots: unknown bot {bot!r}: choose from {', '.join(BOT_NAMES)}")
    members = 1 + len(set(league.rated_bots) | set(league.bots)) + len(league.external)
    if members < cfg.variant.players:
        raise ValueError(f"the league has {members} members without snapshots, fewer than the "
                         f"{cfg.variant.players} seats of a rating round: add league.rated_bots")
    check_roles(cfg)


MAX_SNAPSHOTS = 256
"""Snapshot slots: each is an RLModule built with the algorithm, on the learner and every EnvRunner, so a count in
the millions would fill the machine's memory before training starts."""
LEAGUE_RANGES = {**{key: Range(0, LARGEST) for key in ("main_weight", "snapshot_weight", "bot_weight",
                                                        "external_weight")},
                 "snapshot_win_rate": Range(0, 1, low_open=True, null_ok=True), "snapshot_every": AT_LEAST_ONE,
                 "max_snapshots": Range(0, MAX_SNAPSHOTS), "pfsp_rounds": AT_LEAST_ONE, "lineups": AT_LEAST_ONE,
                 "games_per_lineup": AT_LEAST_ONE}
"""league.<key>: its allowed values (the roles' own settings carry theirs: `policies.league.roles`)."""
LEAGUE_CHOICES = {"pfsp": tuple(PFSP_WEIGHTINGS)}


def check_roles(cfg: TrainConfig) -> None:
    """The roles' settings by their own check (`policies.league.roles.check`: ranges, each role's learners with a
    share of the games, main left some), then what the learners of roles besides main (the exploiters) need of
    the rest of the config."""
    league = cfg.league
    values = {key: getattr(league, key) for key in roles.settings()}
    roles.check(values, prefix="league.")
    games = cfg.sampler.games if cfg.sampler.name == "batched" else cfg.resources.envs_per_runner
    for role in roles.learner_roles():
        count, share = values[role.count.key], values[role.share.key]
        if count and share * games < count:
            count_key, share_key = f"league.{role.count.key}", f"league.{role.share.key}"
            raise ValueError(f"{count_key}={count} is too many for {share_key}={share:g} of the sampler.games={games} "
                             f"games of an EnvRunner: each needs a game at least; lower {count_key} or raise the "
                             "share or sampler.games")
    if not any(values[role.count.key] for role in roles.learner_roles()):
        return
    counts = ", ".join(f"league.{role.count.key}" for role in roles.learner_roles())
    if cfg.algo.name != "ppo":
        raise ValueError(f"exploiters ({counts}) train with algo=ppo only: algo={cfg.algo.name}'s replay keeps "
                         "main's decisions alone")
    if cfg.sampler.name != "batched":
        raise ValueError(f"exploiters ({counts}) need sampler.name=batched, which records each learner's own games")
    if league.max_snapshots < 1:
        raise ValueError("exploiters are frozen into the league's snapshot slots, and league.max_snapshots=0 "
                         "has none: set league.max_snapshots >= 1")


def check_resources(res: ResourcesConfig) -> None:
    check_group("resources", res)
    parse_gpus(res.gpus_per_learner)


def check_budget(budget: BudgetConfig) -> None:
    check_group("budget", budget)
    if not (budget.minutes or budget.env_steps or budget.iterations):
        raise ValueError("the budget is unlimited: set budget.minutes, budget.env_steps or budget.iterations")


MAX_CPUS = 1024
"""CPUs one EnvRunner may reserve: more than any node has."""
MAX_MINUTES = 10 * 365 * 24 * 60
"""Ten years: a longer budget.minutes is a typo; 0 is no limit."""

RESOURCES_RANGES = {"env_runners": NON_NEGATIVE, "envs_per_runner": AT_LEAST_ONE,
                    "cpus_per_env_runner": Range(0, MAX_CPUS), "learners": NON_NEGATIVE}
"""resources.<key>: its allowed values (gpus_per_learner: `parse_gpus`)."""
BUDGET_RANGES = {"minutes": Range(0, MAX_MINUTES), "env_steps": NON_NEGATIVE, "iterations": NON_NEGATIVE}
"""budget.<key>: its allowed values; one of them must be > 0."""


def parse_gpus(value: str) -> float | None:
    """``gpus_per_learner``: None for auto, else the number (>= 0)."""
    if str(value).strip().lower() == "auto":
        return None
    refused = (f"resources.gpus_per_learner={value!r} is not allowed: give "
               f"{ResourcesConfig.ALLOWED['gpus_per_learner']}")
    try:
        gpus = float(value)
    except ValueError:
        raise ValueError(refused) from None
    if not Range(0, MAX_GPUS).allows(gpus):  # float() takes "nan" and "inf"
        raise ValueError(refused)
    return gpus
