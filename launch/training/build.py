"""`TrainConfig` -> RLlib `AlgorithmConfig`: everything `launch/train.py` builds, testable without Ray running.

Modules (see `policies.league.pool`): ``main`` (masked PPO or DQN from
`policies.modules`, network from `policies.networks`), the snapshot slots
(the same spec as main; DQN snapshots play with a small fixed epsilon rather
than main's schedule), one `BotRLModule` per league bot and the learners of every role besides main in
the role table (`policies.league.roles`; with ``league=alphastar``, ``main_exploiter_<i>`` and
``league_exploiter_<i>``: main's spec, trained like main). The learner trains ``main`` and those
learners (``policies_to_train``); the rest stay frozen.

RLlib settings that are not choices but facts about this env (see
``shared/notes/rllib-2.60-facts.md``): ``episodes_to_numpy=False`` (the
default makes sampling quadratic in episode count); DQN samples complete
episodes into a multi-agent episode replay buffer (fragments crash on
turn-based agents); illegal actions are masked inside the modules.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec

from launch.cli import UserError, gcs_answers
from launch.training.algorithms import rllib_training
from launch.training.sampler import BatchedLudoEnvRunner
from launch.training.schema import TrainConfig, parse_gpus
from ludo_env.multi_agent_env import LudoMultiAgentEnv
from policies.league import roles
from policies.league.league import LeagueSettings
from policies.league.pool import MAIN, Matchmaker, SnapshotPool
from policies.modules import BOT_KIND, module_spec


def rules_mapping(cfg: TrainConfig) -> dict[str, Any]:
    """The rules as a plain mapping of `Rules` fields (what env and module configs carry)."""
    variant = cfg.variant
    values = dataclasses.asdict(variant) if dataclasses.is_dataclass(variant) else dict(variant)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


def players(cfg: TrainConfig) -> int:
    return int(rules_mapping(cfg)["players"])


def env_config(cfg: TrainConfig) -> dict[str, Any]:
    """`ludo_env.config.EnvConfig` fields for `LudoMultiAgentEnv`."""
    return {
        "variant": rules_mapping(cfg),
        "obs": cfg.obs.name,
        "reward": dataclasses.asdict(cfg.reward) if dataclasses.is_dataclass(cfg.reward) else dict(cfg.reward),
        "auto_forced_moves": cfg.auto_forced_moves,
        "max_plies": cfg.max_plies,
        "seed": cfg.seed,
    }


def main_model_config(cfg: TrainConfig) -> dict[str, Any]:
    """model_config of ``main``: what the env is (saved with every checkpoint), the network, the algorithm's heads."""
    config: dict[str, Any] = {
        "obs": cfg.obs.name,
        "variant": rules_mapping(cfg),
        "players": players(cfg),
        "network": dataclasses.asdict(cfg.network),
        # What the value head learned to predict: a search that reads the critic needs the shaping to undo it.
        "reward": dataclasses.asdict(cfg.reward),
    }
    return config | rllib_training(cfg.algo.name).main_heads(cfg)


def snapshot_model_config(cfg: TrainConfig) -> dict[str, Any]:
    return main_model_config(cfg) | rllib_training(cfg.algo.name).snapshot_heads


def role_settings(cfg: TrainConfig) -> dict[str, Any]:
    """The roles' settings of the run's league, by key (`policies.league.roles.settings`)."""
    return {key: getattr(cfg.league, key) for key in roles.settings()}


def make_pool(cfg: TrainConfig) -> SnapshotPool:
    league, values = cfg.league, role_settings(cfg)
    counts = {role.count.key: values[role.count.key] for role in roles.learner_roles()}
    return SnapshotPool(players(cfg), league.max_snapshots, league.bots, **counts)


def league_settings(cfg: TrainConfig) -> LeagueSettings:
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in dataclasses.asdict(cfg.league).items()}
    return LeagueSettings(players=players(cfg), **fields)


def first_matchmaker(cfg: TrainConfig, pool: SnapshotPool) -> Matchmaker:
    """Seats before the league has spoken: no snapshot yet, bots uniform."""
    league = cfg.league
    return Matchmaker(players(cfg), (), pool.bot_modules, league.main_weight, league.snapshot_weight,
                      league.bot_weight, cfg.seed, **roles.seating(role_settings(cfg), pool.learners))


def rl_module_spec(cfg: TrainConfig, pool: SnapshotPool) -> MultiRLModuleSpec:
    kind = cfg.algo.name
    specs = {module_id: module_spec(kind, model_config=main_model_config(cfg)) for module_id in pool.trainable}
    snapshot = snapshot_model_config(cfg)
    for module_id in pool.module_ids:
        if module_id in specs:  # an exploiter: built as main is
            continue
        if module_id.startswith("bot_"):
            bot = module_id[len("bot_"):]
            specs[module_id] = module_spec(
                BOT_KIND, model_config={"bot": bot, "players": players(cfg), "variant": rules_mapping(cfg),
                                     "seed": cfg.seed})
        else:
            specs[module_id] = module_spec(kind, model_config=snapshot)
    return MultiRLModuleSpec(rl_module_specs=specs)


def gpus_per_learner(cfg: TrainConfig) -> float:
    """The GPUs each learner asks for: auto is 1 when torch sees a GPU here, else 0 (never a hang on CPU)."""
    gpus = parse_gpus(cfg.resources.gpus_per_learner)
    if gpus is None:
        import torch

        gpus = 1.0 if torch.cuda.is_available() else 0.0
    return gpus


def check_resources(cfg: TrainConfig, cluster: Mapping[str, float] | None = None) -> None:
    """Refuse in one line (`UserError`) what Ray could never grant: it would wait for it forever, silently.

    Call it twice. Before ``ray.init`` (``cluster`` None): a learner in the driver with a GPU needs torch
    to see one here; a cluster to join must answer at its address (``ray.init`` would retry for many
    minutes); and when ``ray_address`` leads to no running cluster (Ray's own lookup, so ``RAY_ADDRESS``
    and a ``ray start`` on this machine count) the Ray about to start is held to this machine's CPUs
    and GPUs. After ``ray.init``, pass ``ray.cluster_resources()``: its totals must cover the
    EnvRunners' CPUs and the learner actors' GPUs. Totals are a necessary condition only (each actor
    still needs one node with room for it), and an autoscaling cluster is judged by what it has now.
    """
    res = cfg.resources
    gpus = gpus_per_learner(cfg)
    cpu_learners = res.learners if gpus == 0 else 0  # RLlib's num_cpus_per_learner="auto": 1 without a GPU
    cpus_needed = res.env_runners * res.cpus_per_env_runner + cpu_learners
    gpus_needed = res.learners * gpus  # learner actors; a learner in the driver takes no Ray resource
    cpu_request = (f"resources.env_runners={res.env_runners} x resources.cpus_per_env_runner="
                   f"{_number(res.cpus_per_env_runner)}"
                   + (f" + resources.learners={res.learners} on CPU" if cpu_learners else ""))
    gpu_request = f"resources.learners={res.learners} x resources.gpus_per_learner={_number(gpus)}"
    if cluster is None:
        if res.learners == 0 and gpus > 0 and local_gpus() < 1:
            raise UserError(f"resources.gpus_per_learner={_number(gpus)} puts the driver's learner on a GPU, "
                            "but torch sees none on this machine: use resources.gpus_per_learner=auto")
        joining = ray_to_join(res.ray_address)
        if joining is not None:
            if not joining.startswith("ray://") and not gcs_answers(joining):
                raise UserError(f"no Ray head answers at {joining} (resources.ray_address="
                                f"{res.ray_address}): start it, or check the address and the firewall")
            return  # what the cluster has is known once connected
        cluster = {"CPU": local_cpus(), "GPU": local_gpus()}
        where = "this machine, where a local Ray would start,"
        advice_gpu = "join a cluster with one (resources.ray_address=HEAD_IP:6379) or use resources=laptop"
    else:
        where = "the Ray cluster"
        advice_gpu = "add GPU nodes or lower resources.learners or resources.gpus_per_learner"
    have_gpus, have_cpus = float(cluster.get("GPU", 0)), float(cluster.get("CPU", 0))
    slack = 1e-9  # 3 x 0.1 CPUs must fit in 0.3
    if gpus_needed > have_gpus + slack:
        raise UserError(f"{gpu_request} needs {_number(gpus_needed)} GPU, but {where} has "
                        f"{_number(have_gpus)} and Ray would wait for it forever: {advice_gpu}")
    if cpus_needed > have_cpus + slack:
        raise UserError(f"{cpu_request} needs {_number(cpus_needed)} CPUs, but {where} has "
                        f"{_number(have_cpus)} and Ray would wait for them forever: lower "
                        "resources.env_runners or resources.cpus_per_env_runner")


def ray_to_join(address: str | None) -> str | None:
    """The cluster ``ray.init(address)`` will join; None when it will start one here (Ray's own lookup)."""
    if address and str(address).startswith("ray://"):
        return str(address)  # Ray Client: always remote
    from ray._private.services import canonicalize_bootstrap_address

    try:
        return canonicalize_bootstrap_address(address)
    except ConnectionError:
        raise UserError(f"resources.ray_address={address}: no running Ray cluster found: start one with "
                        "`ray start --head` or give resources.ray_address=HEAD_IP:6379") from None
    except ValueError:
        raise UserError(f"resources.ray_address={address!r} is not a Ray address: give HOST:PORT, auto "
                        "or null") from None


def local_cpus() -> float:
    """The CPUs a Ray started here would offer (Ray's own count: cgroup limits included)."""
    try:
        from ray._private.utils import get_num_cpus

        return float(get_num_cpus())
    except Exception:  # noqa: BLE001  a private helper: fall back on the plain count
        return float(os.cpu_count() or 1)


def local_gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def build_algorithm_config(cfg: TrainConfig, pool: SnapshotPool | None = None,
                           matchmaker: Matchmaker | None = None,
                           externals: Mapping[str, str] | None = None) -> AlgorithmConfig:
    """The complete RLlib config of a training run; building it starts nothing.

    `externals` (league member name -> player spec) are the league members that are no RLModule; the batched
    sampler seats them when the matchmaker draws their name (`launch.training.sampler`)."""
    pool = pool or make_pool(cfg)
    matchmaker = matchmaker or first_matchmaker(cfg, pool)
    algo = cfg.algo
    res = cfg.resources
    training = rllib_training(algo.name)
    config = training.module.config_class()
    batched = cfg.sampler.name == "batched"
    environment = env_config(cfg)
    if batched:
        environment |= {"batch_games": cfg.sampler.games, "prefetch": cfg.sampler.prefetch,
                        "seat_players": dict(externals or {})}
    elif externals:
        raise UserError("league members that are no RLlib module (league.external) sit at training seats only "
                        "with sampler.name=batched")
    config = (
        config.environment(LudoMultiAgentEnv, env_config=environment)
        .framework("torch", torch_compile_learner=res.compile_learner)
        .env_runners(
            num_env_runners=res.env_runners,
            num_envs_per_env_runner=res.envs_per_runner,
            num_cpus_per_env_runner=res.cpus_per_env_runner,
            episodes_to_numpy=False,
        )
        .learners(num_learners=res.learners, num_gpus_per_learner=gpus_per_learner(cfg))
        .multi_agent(
            policies={MAIN, *pool.module_ids},
            policy_mapping_fn=matchmaker,
            policies_to_train=pool.trainable,
        )
        .rl_module(rl_module_spec=rl_module_spec(cfg, pool))
        .debugging(seed=cfg.seed, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=100)
    )
    if batched:
        # One env copy per runner gives RLlib its spaces and connectors; the B games live in the runner.
        config.env_runners(env_runner_cls=BatchedLudoEnvRunner, num_envs_per_env_runner=1)
    training.apply(config, cfg, batched)
    return config
