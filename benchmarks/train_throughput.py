"""Training throughput of our env against a trivial env behind the same RLlib settings, side by side in one run.

    python benchmarks/train_throughput.py                                     # ppo and dqn, 30 s windows, 3 repeats
    python benchmarks/train_throughput.py --algos ppo --seconds 20 --repeats 2
    python benchmarks/train_throughput.py --algos dqn resources.env_runners=2  # any launch/train.py override
    python benchmarks/train_throughput.py --seconds 0 --repeats 15            # a busy machine: see below
    python benchmarks/train_throughput.py --json                              # machine-readable

What is measured
  Env steps per second *trained*: ``num_env_steps_sampled_lifetime`` gained
  over whole ``algo.train()`` iterations (sampling, learner updates, weight
  sync, replay; everything an iteration of ``launch/train.py`` does except
  its evaluation, logging and checkpoints), divided by their wall time. One
  env step is one decision of the seat to move.

  ours     the algorithm exactly as ``launch/train.py +exp=<algo>_selfplay``
           builds it: ``launch.build.build_algorithm_config`` on the composed
           config (``conf/config.yaml`` + ``+exp=ppo_selfplay`` or
           ``+exp=dqn_selfplay`` + the overrides), env `LudoMultiAgentEnv`.
  trivial  the same AlgorithmConfig (built by the same call from the same
           config; same modules: main, the snapshot slots and the bots; same
           matchmaker, resources and training settings) with only the env
           swapped by ``.environment(TrivialLudoEnv, env_config=...)``.
           `TrivialLudoEnv` has our observation space
           (``ludo_env.core.observation_space(obs)``: observations,
           action_mask, state), ``ludo_env.core.ACTION_SPACE``, the same
           seats, and our turn structure: only the mover observes, a shaping
           reward of 0 comes with the mover's next observation, every seat
           that moved is rewarded and terminated at the end. Its steps do no
           work: it replays a fixed stream of real decisions (recorded from
           our env before timing, so every mask has a legal move and the bots
           read real positions) and ends every episode after a fixed number
           of decisions: our mean decisions per episode under random legal
           play, measured in the same run (``--games`` games through
           `LudoMultiAgentEnv`, which also give the stream). RLlib's own
           ``episode_len_mean`` is no measure of it: it averages the episodes
           that finished, a sample biased to short games (heavily so for DQN,
           below); it is printed for reference.

  ratio = ours / trivial (target >= 0.7): the share of RLlib's ceiling on
  this config that our env keeps.

  DQN, kept: ``batch_mode="complete_episodes"`` (launch.build) makes every
  ``sample()`` reset all sub-envs and step until ``num_envs_per_env_runner``
  episodes have finished; the episodes still running then are dropped, yet
  their steps count in ``num_env_steps_sampled_lifetime``. Our games vary in
  length, so a share of ours' sampled steps never reaches the replay buffer;
  the trivial env's equal-length episodes all finish together and lose
  none. So for DQN the table also gives env steps *kept* per second (the
  replay buffer's ``num_env_steps_added_lifetime``), the steps that can be
  trained on, and the ratio of those; kept/sampled is ours' share kept.

Procedure: both algorithms are built and alive at once (Ray is told of
enough logical CPUs for both; only one samples at a time). Each first fills
``--snapshots`` snapshot slots with main's weights (`launch.train.push_weights`,
as the league does every ``league.snapshot_every`` iterations), so the matchmaker spreads
seats over main, snapshots and bots as in a run under way, then trains
``--warmup`` iterations (numba and torch warm-up); DQN first trains until
``algo.learning_starts`` env steps are sampled, so every timed iteration
updates the learner. Then ``--repeats`` windows per side, each whole
iterations until ``--seconds`` have passed, interleaved (ours, trivial,
trivial, ours, ...) so the load of other processes falls on both sides
alike. Medians of the windows are reported; the ratio is of medians.
No wandb, no checkpoints, no evaluation.

Shared machines: the rates swing with other people's load, in bursts (on 2
cores at a load average near 3.5, one PPO iteration of ours took anywhere
from 4 s to 21 s, iteration after iteration, while alone and unloaded both
sides run at a steady pace). A window holds whole iterations, and a PPO
iteration is 8192 env steps. On a busy machine prefer many short windows,
``--seconds 0 --repeats 15`` (one iteration per window, the sides
alternating), whose medians shrug off the bursts, and read a ratio as
noise unless it repeats.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from typing import Any

os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv

ALGOS = ("ppo", "dqn")
SIDES = ("ours", "trivial")


class TrivialLudoEnv(MultiAgentEnv):
    """Our spaces and turn structure with no game behind them: replays a stream of recorded decisions.

    env_config: ``obs`` (encoder name, for the observation space), ``players``,
    ``episode_len`` (decisions per episode), ``stream`` (a mapping of
    ``observations``, ``action_mask``, ``state`` arrays, one row per recorded
    decision) and ``movers`` (the seat of each row). Actions are ignored.
    """

    def __init__(self, config: dict | None = None):
        super().__init__()
        from ludo_env.core import ACTION_SPACE, observation_space

        where = (int(getattr(config, "worker_index", 0)), int(getattr(config, "vector_index", 0)))
        config = dict(config or {})
        self.players = int(config["players"])
        self.episode_len = int(config["episode_len"])
        stream = config["stream"]
        self.movers = [f"seat_{int(s)}" for s in config["movers"]]
        keys = ("observations", "action_mask", "state")
        self.rows = [{k: stream[k][i] for k in keys} for i in range(len(self.movers))]
        self.possible_agents = [f"seat_{s}" for s in range(self.players)]
        self.agents = list(self.possible_agents)
        space = observation_space(config["obs"])
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: ACTION_SPACE for a in self.possible_agents}
        # Each vectorised copy starts at another place of the stream.
        self.cursor = (where[0] * 7919 + where[1] * 104729) % len(self.rows)
        self.t = 0
        self.played: set[str] = set()

    def _next(self) -> dict:
        self.cursor = (self.cursor + 1) % len(self.rows)
        mover = self.movers[self.cursor]
        self.played.add(mover)
        return {mover: self.rows[self.cursor]}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.t = 0
        self.played = set()
        return self._next(), {}

    def step(self, action_dict: dict):
        self.t += 1
        if self.t < self.episode_len:
            obs = self._next()
            return obs, {a: 0.0 for a in obs}, {"__all__": False}, {"__all__": False}, {}
        played = sorted(self.played)
        winner = played[self.t % len(played)]
        rewards = {a: 1.0 if a == winner else -1.0 / max(1, len(played) - 1) for a in played}
        return {}, rewards, {**{a: True for a in played}, "__all__": True}, {"__all__": False}, {}


# ---------------------------------------------------------------- config and our env's decisions
def compose_config(algo: str, overrides: list[str]):
    """The TrainConfig of ``launch/train.py +exp=<algo>_selfplay <overrides>``, checked."""
    from omegaconf import OmegaConf

    from launch.cli import compose
    from launch.schema import check

    dict_cfg = compose("config", [f"+exp={algo}_selfplay", "run_dir=/tmp/train_throughput", *overrides])
    cfg = OmegaConf.to_object(dict_cfg)
    check(cfg)
    return cfg


def record_decisions(cfg, games: int, max_rows: int, seed: int) -> dict[str, Any]:
    """Random legal play in our env: mean decisions per episode, env-only speed, and a stream of real decisions."""
    from launch import build
    from ludo_env.multi_agent_env import LudoMultiAgentEnv

    env = LudoMultiAgentEnv(build.env_config(cfg))
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)  # compiles
    lengths, rows, movers = [], [], []
    start = time.perf_counter()
    for g in range(games):
        obs, _ = env.reset(seed=seed + g)
        steps = 0
        while obs:
            (agent, o), = obs.items()
            if len(rows) < max_rows:
                rows.append({k: np.array(v) for k, v in o.items()})
                movers.append(int(agent.rpartition("_")[2]))
            obs, *_ = env.step({agent: int(rng.choice(np.flatnonzero(o["action_mask"])))})
            steps += 1
        lengths.append(steps)
    elapsed = time.perf_counter() - start
    stream = {k: np.stack([r[k] for r in rows]) for k in rows[0]}
    return {
        "games": games,
        "mean_decisions": float(np.mean(lengths)),
        "decisions_range": [int(min(lengths)), int(max(lengths))],
        "env_only_steps_per_s": sum(lengths) / elapsed,
        "stream": stream,
        "movers": np.array(movers, dtype=np.int8),
    }


# ---------------------------------------------------------------- timing
def env_steps(result: dict) -> int:
    from launch.train import env_steps_of

    return env_steps_of(result)


def episode_len(result: dict) -> float | None:
    value = result.get("env_runners", {}).get("episode_len_mean")
    return None if value is None or not np.isfinite(value) else float(value)


class Side:
    """One built algorithm (ours or trivial), its pool, and its timed windows."""

    def __init__(self, name: str, algo_config, pool):
        self.name = name
        self.algo = algo_config.build_algo()
        self.pool = pool
        self.steps = 0
        self.added = 0
        self.iterations = 0
        self.windows: list[dict[str, float]] = []
        self.episode_len: float | None = None

    def train(self) -> dict:
        result = self.algo.train()
        self.iterations = int(self.algo.iteration)
        self.steps = env_steps(result)
        self.added = int(result.get("replay_buffer", {}).get("num_env_steps_added_lifetime", self.added))
        self.episode_len = episode_len(result) or self.episode_len
        return result

    def warm_up(self, snapshots: int, iterations: int, learning_starts: int, cfg) -> float:
        from launch import build
        from launch.train import install_matchmaker, push_weights
        from policies.league.pool import MAIN, snapshot_id

        start = time.perf_counter()
        # Fill the slots with main's weights, as the league does, so snapshots play their share of seats.
        weights = self.algo.learner_group.get_weights([MAIN])[MAIN]
        for slot in range(snapshots):
            push_weights(self.algo, snapshot_id(slot), weights)
            self.pool.fill(slot, self.iterations)
        if snapshots:
            first = build.first_matchmaker(cfg, self.pool)
            install_matchmaker(self.algo, dataclasses.replace(first, snapshots=tuple(self.pool.filled)))
        while self.steps < learning_starts:
            self.train()
        for _ in range(iterations):
            self.train()
        return time.perf_counter() - start

    def window(self, seconds: float) -> dict[str, float]:
        steps0, added0, start = self.steps, self.added, time.perf_counter()
        iterations = 0
        while time.perf_counter() - start < seconds or iterations == 0:
            self.train()
            iterations += 1
        elapsed = time.perf_counter() - start
        row = {"steps_per_s": (self.steps - steps0) / elapsed, "kept_per_s": (self.added - added0) / elapsed,
               "seconds": elapsed, "iterations": iterations, "env_steps": self.steps - steps0,
               "env_steps_kept": self.added - added0}
        self.windows.append(row)
        return row

    def median(self, key: str = "steps_per_s") -> float:
        return statistics.median(w[key] for w in self.windows)

    def stop(self) -> None:
        self.algo.stop()


def measure(algo: str, cfg, overrides: list[str], args) -> dict[str, Any]:
    from launch import build
    from launch.train import seed_everything

    decisions = record_decisions(cfg, args.games, args.stream_rows, seed=cfg.seed + 12345)
    snapshots = cfg.league.max_snapshots if args.snapshots < 0 else min(args.snapshots, cfg.league.max_snapshots)
    learning_starts = int(cfg.algo.learning_starts) if algo == "dqn" else 0

    length = round(decisions["mean_decisions"])
    if TrivialLudoEnv.__module__ != "__main__":  # imported: the EnvRunners cannot import this file by name
        from ray import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[TrivialLudoEnv.__module__])
    sides: dict[str, Side] = {}
    try:
        for name in SIDES:
            seed_everything(cfg.seed)
            pool = build.make_pool(cfg)
            config = build.build_algorithm_config(cfg, pool)
            if name == "trivial":
                config = config.environment(TrivialLudoEnv, env_config={
                    "obs": cfg.obs.name, "players": build.players(cfg), "episode_len": length,
                    "stream": decisions["stream"], "movers": decisions["movers"]})
            start = time.perf_counter()
            sides[name] = Side(name, config, pool)
            built = time.perf_counter() - start
            warm = sides[name].warm_up(snapshots, args.warmup, learning_starts, cfg)
            log(args, f"{algo} {name}: built in {built:.1f} s, warmed up in {warm:.1f} s "
                      f"({sides[name].iterations} iterations, {sides[name].steps:,} env steps)")
        for r in range(args.repeats):
            for name in (SIDES if r % 2 == 0 else SIDES[::-1]):
                w = sides[name].window(args.seconds)
                kept = f", {w['kept_per_s']:,.0f} kept/s" if algo == "dqn" else ""
                log(args, f"{algo} {name} window {r + 1}/{args.repeats}: {w['steps_per_s']:,.0f} env steps/s{kept} "
                          f"({w['env_steps']:,} steps, {w['iterations']} iterations, {w['seconds']:.1f} s)")
    finally:
        for side in sides.values():
            side.stop()

    ours, trivial = sides["ours"].median(), sides["trivial"].median()
    res = cfg.resources
    kept: dict[str, Any] = {}
    if algo == "dqn":
        ours_kept, trivial_kept = sides["ours"].median("kept_per_s"), sides["trivial"].median("kept_per_s")
        kept = {"ours_kept_per_s": ours_kept, "trivial_kept_per_s": trivial_kept,
                "ratio_kept": ours_kept / trivial_kept,
                "ours_kept_share": sum(w["env_steps_kept"] for w in sides["ours"].windows)
                / sum(w["env_steps"] for w in sides["ours"].windows)}
    return {
        "algo": algo,
        "exp": f"{algo}_selfplay",
        "overrides": overrides,
        "env_runners": res.env_runners,
        "envs_per_runner": res.envs_per_runner,
        "learners": res.learners,
        "train_batch_size": cfg.algo.train_batch_size,
        "snapshots_filled": snapshots,
        "bots": list(cfg.league.bots),
        "decisions_per_episode": decisions["mean_decisions"],
        "decisions_range": decisions["decisions_range"],
        "trivial_episode_len": length,
        "env_only_steps_per_s": decisions["env_only_steps_per_s"],
        "ours_steps_per_s": ours,
        "trivial_steps_per_s": trivial,
        "ratio": ours / trivial,
        **kept,
        "episode_len_mean": {n: s.episode_len for n, s in sides.items()},
        "windows": {n: s.windows for n, s in sides.items()},
    }


def log(args, line: str) -> None:
    if not args.quiet:
        print(line, file=sys.stderr if args.json else sys.stdout, flush=True)


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Flags, and the launch/train.py overrides (every argument of the form key=value)."""
    overrides = [a for a in argv if "=" in a and not a.startswith("-")]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="Other arguments key=value are launch/train.py overrides.")
    parser.add_argument("--algos", nargs="+", choices=ALGOS, default=list(ALGOS), help="algorithms to measure")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of a timed window (whole iterations)")
    parser.add_argument("--repeats", type=int, default=3, help="timed windows per side; medians are reported")
    parser.add_argument("--warmup", type=int, default=2, help="untimed iterations per side before timing")
    parser.add_argument("--snapshots", type=int, default=-1,
                        help="snapshot slots to fill before timing (-1: all of league.max_snapshots)")
    parser.add_argument("--games", type=int, default=200, help="random games that measure decisions per episode")
    parser.add_argument("--stream-rows", type=int, default=4096, help="recorded decisions the trivial env replays")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args([a for a in argv if a not in overrides])
    return args, overrides


def main(argv: list[str]) -> None:
    args, overrides = parse(argv)
    import ray

    from launch.cli import UserError, fail

    try:
        configs = {algo: compose_config(algo, overrides) for algo in args.algos}  # bad overrides fail here
    except (UserError, ValueError) as err:
        fail(err)
    # Both sides are alive at once: tell Ray of enough logical CPUs for two sets of actors.
    need = max(2 * (c.resources.env_runners * c.resources.cpus_per_env_runner + c.resources.learners)
               for c in configs.values())
    address = next(iter(configs.values())).resources.ray_address
    ray.init(address=address, num_cpus=None if address else max(os.cpu_count() or 1, int(np.ceil(need)) + 1),
             logging_level="ERROR", include_dashboard=False, configure_logging=True, log_to_driver=False)
    try:
        results = [measure(algo, configs[algo], overrides, args) for algo in args.algos]
    finally:
        ray.shutdown()

    if args.json:
        print(json.dumps({"cpus": os.cpu_count(), "seconds": args.seconds, "repeats": args.repeats,
                          "results": results}, indent=2))
        return
    print(f"\n{os.cpu_count()} CPUs, medians of {args.repeats} windows of >= {args.seconds:g} s per side, "
          f"overrides: {' '.join(overrides) or '(none)'}")
    print(f"{'algo':<6}{'env steps':<11}{'runners x envs':>15}{'ours steps/s':>14}{'trivial steps/s':>17}{'ratio':>7}")
    for r in results:
        where = f"{r['env_runners']} x {r['envs_per_runner']}"
        rows = [("sampled", r["ours_steps_per_s"], r["trivial_steps_per_s"], r["ratio"])]
        if "ratio_kept" in r:
            rows.append(("kept", r["ours_kept_per_s"], r["trivial_kept_per_s"], r["ratio_kept"]))
        for kind, ours, trivial, ratio in rows:
            print(f"{r['algo']:<6}{kind:<11}{where:>15}{ours:>14,.0f}{trivial:>17,.0f}{ratio:>7.2f}")
    print("target: ratio >= 0.7")
    for r in results:
        lengths = r["episode_len_mean"]
        line = (f"{r['algo']}: trivial episodes {r['trivial_episode_len']} decisions (ours under random legal play: "
                f"mean {r['decisions_per_episode']:.1f}, range {r['decisions_range'][0]}-{r['decisions_range'][1]}, "
                f"{r['env_only_steps_per_s']:,.0f} steps/s alone); RLlib episode_len_mean ours "
                f"{_number(lengths['ours'])}, trivial {_number(lengths['trivial'])}")
        if "ours_kept_share" in r:
            line += f"; ours kept {100 * r['ours_kept_share']:.0f}% of its sampled steps"
        print(line)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    main(sys.argv[1:])
