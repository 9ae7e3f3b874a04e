"""`TrainConfig` -> RLlib `AlgorithmConfig`: everything `launch/train.py` builds, testable without Ray running.

Modules (see `policies.league.pool`): ``main`` (masked PPO or DQN from
`policies.modules`, network from `policies.networks`), the snapshot slots
(the same spec as main; DQN snapshots play with a small fixed epsilon rather
than main's schedule), one `BotRLModule` per league bot and, with ``league=alphastar``, the
exploiters (``main_exploiter_<i>``, ``league_exploiter_<i>``: main's spec, trained like main). The
learner trains ``main`` and the exploiters (``policies_to_train``); the rest stay frozen.

RLlib settings that are not choices but facts about this env (see
``shared/notes/rllib-2.60-facts.md``): ``episodes_to_numpy=False`` (the
default makes sampling quadratic in episode count); DQN samples complete
episodes into a multi-agent episode replay buffer (fragments crash on
turn-based agents); illegal actions are masked inside the modules.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec

from launch.cli import UserError, gcs_answers
from launch.training.dqn_learner import ADVANTAGE_LEARNING, AdvantageLearningDQNLearner
from launch.training.ppo_learner import SharedMinibatchPPOLearner
from launch.training.replay_buffer import ColumnReplayDQN
from launch.training.sampler import BatchedLudoEnvRunner
from launch.training.schema import TrainConfig, parse_gpus
from ludo_env.multi_agent_env import LudoMultiAgentEnv
from policies.league.league import LeagueSettings
from policies.league.pool import MAIN, Matchmaker, SnapshotPool
from policies.algorithms import module_algorithm
from policies.modules import module_spec

SNAPSHOT_EPSILON = 0.02
"""A DQN snapshot's exploration: a little noise keeps a frozen opponent from repeating itself."""


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


def epsilon_schedule(cfg: TrainConfig) -> list[tuple[int, float]]:
    algo = cfg.algo
    return [(0, float(algo.epsilon_start)), (int(algo.epsilon_steps), float(algo.epsilon_end))]


def snapshot_model_config(cfg: TrainConfig) -> dict[str, Any]:
    return main_model_config(cfg) | rllib_training(cfg.algo.name).snapshot_heads


def make_pool(cfg: TrainConfig) -> SnapshotPool:
    league = cfg.league
    return SnapshotPool(players(cfg), league.max_snapshots, league.bots, league.main_exploiters,
                        league.league_exploiters)


def league_settings(cfg: TrainConfig) -> LeagueSettings:
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in dataclasses.asdict(cfg.league).items()}
    return LeagueSettings(players=players(cfg), **fields)


def first_matchmaker(cfg: TrainConfig, pool: SnapshotPool) -> Matchmaker:
    """Seats before the league has spoken: no snapshot yet, bots uniform."""
    league = cfg.league
    return Matchmaker(players(cfg), (), pool.bot_modules, league.main_weight, league.snapshot_weight,
                      league.bot_weight, cfg.seed, main_exploiters=pool.main_exploiters,
                      league_exploiters=pool.league_exploiters, main_exploiter_share=league.main_exploiter_share,
                      league_exploiter_share=league.league_exploiter_share,
                      main_exploiter_snapshot_weight=league.main_exploiter_snapshot_weight)


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
                "bot", model_config={"bot": bot, "players": players(cfg), "variant": rules_mapping(cfg),
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
    except Exception:  # a private helper: fall back on the plain count
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
    config = module_algorithm(algo.name).config_class()
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


def _ppo_heads(cfg: TrainConfig) -> dict[str, Any]:
    return {"vf_share_layers": cfg.algo.vf_share_layers}


def _dqn_heads(cfg: TrainConfig) -> dict[str, Any]:
    algo = cfg.algo
    return {"double_q": algo.double_q, "dueling": algo.dueling, "epsilon": epsilon_schedule(cfg),
            "num_atoms": algo.num_atoms, "v_min": algo.v_min, "v_max": algo.v_max}


def _train_ppo(config: AlgorithmConfig, cfg: TrainConfig, batched: bool) -> None:
    algo = cfg.algo
    config.training(
        lr=learning_rate(cfg),
        gamma=algo.gamma,
        lambda_=algo.gae_lambda,
        train_batch_size_per_learner=algo.train_batch_size,
        minibatch_size=algo.minibatch_size,
        num_epochs=algo.num_epochs,
        clip_param=algo.clip_param,
        vf_loss_coeff=algo.vf_loss_coeff,
        vf_clip_param=algo.vf_clip_param,
        entropy_coeff=algo.entropy_coeff,
        use_kl_loss=algo.kl_coeff > 0,
        kl_coeff=algo.kl_coeff,
        grad_clip=algo.grad_clip,
    )
    if cfg.league.main_exploiters or cfg.league.league_exploiters:
        # Several trained modules of unequal batches: each minibatch takes the same share of each (ppo_learner.py).
        config.learners(learner_class=SharedMinibatchPPOLearner)


def _train_dqn(config: AlgorithmConfig, cfg: TrainConfig, batched: bool) -> None:
    algo = cfg.algo
    if batched:
        # Episodes are per main seat (single-agent chunks, continued across samples), so fragments are
        # safe and nothing sampled is dropped: every decision of main reaches the replay buffer. Sixteen
        # decisions per game and call: a call costs about 0.1 s of shipping and Ray transfer whatever its
        # size, so smaller calls make the runner wait on that (measured: 512 steps per call, 0.04 s to play,
        # 0.1-0.27 s round trip).
        config.env_runners(batch_mode="truncate_episodes",
                           rollout_fragment_length=max(algo.rollout_fragment_length, 16 * cfg.sampler.games))
        # Its updates take the replay's numpy columns as they are, not episodes through the learner
        # connectors, which cost four times the update itself (launch/training/replay_buffer.py).
        config.algo_class = ColumnReplayDQN
    else:
        # Per-game MultiAgentEpisodes crash on fragments with turn-based agents (shared/notes).
        config.env_runners(batch_mode="complete_episodes", rollout_fragment_length=algo.rollout_fragment_length)
    config.training(
        lr=learning_rate(cfg),
        gamma=algo.gamma,
        train_batch_size_per_learner=algo.train_batch_size,
        double_q=algo.double_q,
        dueling=algo.dueling,
        num_atoms=algo.num_atoms,
        v_min=algo.v_min,
        v_max=algo.v_max,
        n_step=algo.n_step,
        target_network_update_freq=algo.target_network_update_freq,
        tau=algo.tau,
        replay_buffer_config=replay_buffer_config(cfg, multi_agent=not batched),
        epsilon=epsilon_schedule(cfg),
        num_steps_sampled_before_learning_starts=algo.learning_starts,
        training_intensity=algo.training_intensity,
        td_error_loss_fn=algo.td_error_loss,
        grad_clip=algo.grad_clip,
        store_buffer_in_checkpoints=algo.store_buffer_in_checkpoints,
    )
    if algo.advantage_learning > 0:
        config.learners(learner_class=AdvantageLearningDQNLearner,
                        learner_config_dict={ADVANTAGE_LEARNING: algo.advantage_learning})
    config.reporting(min_sample_timesteps_per_iteration=algo.steps_per_iteration)


def _ppo_progress(cfg: TrainConfig, env_steps: int, learner: Mapping[str, Any]) -> dict[str, Any]:
    return {"entropy": learner.get("entropy")}


def _dqn_progress(cfg: TrainConfig, env_steps: int, learner: Mapping[str, Any]) -> dict[str, Any]:
    return {"epsilon": epsilon_at(cfg, env_steps), "q_mean": learner.get("qf_mean")}


def learning_rate(cfg: TrainConfig) -> float | list[list[float]]:
    """`algo.lr`, or with `algo.lr_end` RLlib's piecewise-linear schedule over sampled env steps: `lr` at 0,
    `lr_end` at budget.env_steps, held after (a resumed run picks it up at its step count)."""
    algo = cfg.algo
    if algo.lr_end is None:
        return algo.lr
    return [[0, algo.lr], [cfg.budget.env_steps, algo.lr_end]]


def epsilon_at(cfg: TrainConfig, env_steps: int) -> float:
    algo = cfg.algo
    frac = min(1.0, env_steps / max(1, algo.epsilon_steps))
    return algo.epsilon_start + frac * (algo.epsilon_end - algo.epsilon_start)


@dataclass(frozen=True)
class RLlibTraining:
    """How launch trains one RLlib algorithm (`policies.algorithms` holds what its saved module is)."""

    main_heads: Callable[[TrainConfig], dict[str, Any]]
    """model_config keys of main's heads, saved with every checkpoint."""
    snapshot_heads: dict[str, Any]
    """What a snapshot plays differently from main (a DQN snapshot explores at `SNAPSHOT_EPSILON`)."""
    apply: Callable[[AlgorithmConfig, TrainConfig, bool], None]
    """``(config, cfg, batched)``: the algorithm's training settings onto RLlib's config."""
    progress: Callable[[TrainConfig, int, Mapping[str, Any]], dict[str, Any]]
    """``(cfg, env_steps, learner metrics of main)`` -> the algorithm's own progress columns."""


RLLIB_TRAINING: dict[str, RLlibTraining] = {
    "ppo": RLlibTraining(_ppo_heads, {}, _train_ppo, _ppo_progress),
    "dqn": RLlibTraining(_dqn_heads, {"epsilon": [(0, SNAPSHOT_EPSILON)]}, _train_dqn, _dqn_progress),
}


def rllib_training(name: str) -> RLlibTraining:
    """The training entry of an RLlib algorithm; one line naming the known ones if there is none."""
    if name not in RLLIB_TRAINING:
        raise ValueError(f"algo.name={name!r} is not an RLlib algorithm here: choose {' or '.join(RLLIB_TRAINING)}")
    return RLLIB_TRAINING[name]


# By import path: RLlib recognises episode buffers by "EpisodeReplayBuffer" in the type's string.
MAIN_BUFFER = "launch.training.replay_buffer.MainEpisodeReplayBuffer"


def replay_buffer_config(cfg: TrainConfig, multi_agent: bool = True) -> dict[str, Any]:
    """The replay buffer: single-agent episodes (main's seats) from the batched sampler, multi-agent games from
    the per-game one."""
    algo = cfg.algo
    if algo.replay == "prioritized":
        # A custom buffer config replaces RLlib's defaults, so alpha and beta must be given.
        kind = "MultiAgentPrioritizedEpisodeReplayBuffer" if multi_agent else MAIN_BUFFER
        return {"type": kind, "capacity": algo.buffer_capacity,
                "alpha": algo.prioritized_alpha, "beta": algo.prioritized_beta}
    if algo.replay == "uniform":
        if multi_agent:
            return {"type": "MultiAgentEpisodeReplayBuffer", "capacity": algo.buffer_capacity}
        return {"type": MAIN_BUFFER, "capacity": algo.buffer_capacity, "alpha": 0.0, "beta": 0.0}
    raise ValueError(f"algo.replay={algo.replay!r} is not allowed: choose prioritized or uniform")
