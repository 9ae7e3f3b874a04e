"""Where one PPO iteration's wall time goes: the engine, the encoders, the forward passes, episode building, the
learner connectors, GAE, forward and backward, the optimizer, the transfers, the rest.

    python benchmarks/iteration_profile.py                                  # +exp=ppo_selfplay, 5 iterations timed
    python benchmarks/iteration_profile.py --iterations 3 algo.train_batch_size=8192   # any launch/train.py override
    python benchmarks/iteration_profile.py sampler.prefetch=false           # sampling and learning one after the other
    python benchmarks/iteration_profile.py --json profile.json

What is measured
  The algorithm of ``+exp=ppo_selfplay`` with the overrides given, built as ``benchmarks/train_throughput.py``
  builds it (its `Side`: snapshot slots filled with main's weights, ``--warmup`` iterations), then
  ``--iterations`` calls of ``algo.train()`` (everything of an iteration; the upkeep between iterations is
  ``benchmarks/upkeep_profile.py``'s). A clock wraps the functions of `DRIVER_PARTS` in the driver (the learner
  is local there) and those of `RUNNER_PARTS` in every EnvRunner (installed in the actor's process). Time goes to
  the innermost wrapped function running, per thread, so the parts of each process add up to its total: a part's
  seconds are its own, without the parts inside it (GAE's value pass is GAE's; the encoders inside main's
  decisions are the encoders').

  Two tables, both as shares of the timed iterations' wall time:
    driver    the iteration's critical path, adding up to 100%: the wait for the EnvRunners' samples (split into
              the EnvRunners' ``sample()`` calls and the Ray round trip around them), the learner's connectors,
              GAE, numpy to tensors, forward pass, loss, backward, optimizer, the rest of its update, the weight
              sync, and RLlib's own bookkeeping (other);
    runner    what the EnvRunners' sampling consists of: the engine (numba), the encoders, main's forward pass,
              the snapshots' forward passes, the bots, recording, episode building, game starts and ends, the rest.
              With ``sampler.prefetch=true`` (the default) a remote EnvRunner samples the next batch while the
              learner trains, so these overlap the driver's rows; its busy share may approach 100% on its own.

  Shares hold on a loaded machine far better than seconds do (everything slows together); the seconds per
  iteration are printed too. The clock costs a few microseconds per wrapped call, a few thousand calls an
  iteration.
"""
from __future__ import annotations

import functools
import importlib
import json
import os
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

if __package__ in (None, ""):  # `python benchmarks/iteration_profile.py` puts benchmarks/, not the project, on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from launch.cli import OneLineParser, UserError, fail, positive

RLLIB = "ray.rllib"
DRIVER_PARTS: dict[str, tuple[str, ...]] = {
    "waiting for the EnvRunners' samples": (f"{RLLIB}.algorithms.ppo.ppo:synchronous_parallel_sample",),
    "learner connectors (episodes to a batch)": (
        f"{RLLIB}.connectors.learner.learner_connector_pipeline:LearnerConnectorPipeline.__call__",),
    "GAE (its value pass included)": (
        f"{RLLIB}.connectors.learner.general_advantage_estimation:GeneralAdvantageEstimation.__call__",),
    "numpy to tensors (transfer)": (f"{RLLIB}.connectors.common.numpy_to_tensor:NumpyToTensor.__call__",),
    "forward pass (learner)": (f"{RLLIB}.core.rl_module.torch.torch_rl_module:TorchRLModule.forward_train",),
    "loss": (f"{RLLIB}.core.learner.learner:Learner.compute_losses",),
    "backward": (f"{RLLIB}.core.learner.torch.torch_learner:TorchLearner.compute_gradients",),
    "optimizer (clipping, step)": (f"{RLLIB}.core.learner.learner:Learner.postprocess_gradients",
                                   f"{RLLIB}.core.learner.torch.torch_learner:TorchLearner.apply_gradients"),
    "learner: the rest of its update (minibatches, metrics)": (f"{RLLIB}.core.learner.learner:Learner.update",),
    "weight sync to the EnvRunners (transfer)": (
        f"{RLLIB}.env.env_runner_group:EnvRunnerGroup.sync_weights",),
}
"""Part -> the functions (``module:attribute``) whose own time it is, in the driver."""
SAMPLE_CALL = "the EnvRunners' sample() calls"
DECISIONS = {"main": "main's decisions: the rest (actions, masks)", "opponents": "opponents' decisions: the rest"}
RUNNER_PARTS: dict[str, tuple[str, ...]] = {
    "engine (numba: moves, new games, rewards)": ("ludo_env.core:LudoGames.play", "ludo_env.core:LudoGames.reset",
                                                  "ludo_env.core:LudoGames.collect_decision_reward",
                                                  "ludo_env.core:LudoGames.collect_end_rewards"),
    "encoders (observations)": ("ludo_env.core:LudoGames.observe",),
    DECISIONS["main"]: ("launch.training.sampler:BatchedLudoEnvRunner._learner_decisions",),
    DECISIONS["opponents"]: ("launch.training.sampler:BatchedLudoEnvRunner._opponent_decisions",),
    "bots (numba)": ("policies.bots:Bot.act",),
    "recording main's steps": ("launch.training.sampler:_Records.add",),
    "episode building": ("launch.training.sampler:BatchedLudoEnvRunner._ship",),
    "game starts and ends (per game Python)": ("launch.training.sampler:BatchedLudoEnvRunner._start_games",
                                               "launch.training.sampler:BatchedLudoEnvRunner._end_games"),
    "the rest of sampling (per step numpy)": ("launch.training.sampler:BatchedLudoEnvRunner._collect",),
}
"""Part -> the functions whose own time it is, in an EnvRunner. Its ``sample()`` is timed by its own timer
(`time_sample_calls`): Ray calls an actor's methods through functions it took when the actor started."""
FORWARD = (f"{RLLIB}.core.rl_module.torch.torch_rl_module:TorchRLModule.forward_exploration",
           f"{RLLIB}.core.rl_module.torch.torch_rl_module:TorchRLModule.forward_inference")
FORWARD_BY_CALLER = {DECISIONS["main"]: "main's forward pass", DECISIONS["opponents"]: "snapshots' forward passes",
                     None: "forward passes elsewhere"}
"""A forward pass in an EnvRunner is main's or a snapshot's by the part that called it."""


class Clock:
    """Seconds of each part, each second to the innermost part running in its thread."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.inclusive: dict[str, float] = defaultdict(float)
        """Seconds of a part's calls with the parts inside them (kept for `SAMPLE_CALL` only)."""
        self.local = threading.local()

    def stack(self) -> list:
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        return stack

    def enter(self, part: str) -> None:
        now, stack = time.perf_counter(), self.stack()
        if stack:
            self.seconds[stack[-1][0]] += now - stack[-1][1]
        stack.append([part, now])

    def leave(self) -> None:
        now, stack = time.perf_counter(), self.stack()
        part, since = stack.pop()
        self.seconds[part] += now - since
        self.calls[part] += 1
        if stack:
            stack[-1][1] = now

    def caller(self) -> str | None:
        stack = self.stack()
        return stack[-1][0] if stack else None

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()
        self.inclusive.clear()

    def totals(self) -> dict[str, Any]:
        return {"seconds": dict(self.seconds), "calls": dict(self.calls), "inclusive": dict(self.inclusive)}


def resolve(target: str, classes: tuple[type, ...] = ()):
    """(owner, attribute name) of ``module:Class.attribute``; None when this code base has no such thing. A class
    of that name in `classes` (an actor's MRO) that defines the attribute is taken first: Ray's actor class is a
    subclass of the same name whose own copies of the methods (its tracing wrappers) call the originals, so a
    method patched on the module's class would never be reached."""
    module_name, _, attribute = target.partition(":")
    *path, name = attribute.split(".")
    if len(path) == 1:
        for owner in classes:
            if owner.__name__ == path[0] and name in vars(owner):
                return owner, name
    try:
        owner = importlib.import_module(module_name)
    except ImportError:
        return None
    for step in path:
        owner = getattr(owner, step, None)
    if owner is None or name not in vars(owner):
        return None
    return owner, name


def wrap(clock: Clock, part, owner, name: str) -> None:
    """Time calls of ``owner.name`` as `part` (a name, or a mapping of the calling part to a name)."""
    original = getattr(owner, name)
    if getattr(original, "__profiled__", False):
        return

    @functools.wraps(original)
    def timed(*args, **kwargs):
        clock.enter(part if isinstance(part, str) else part.get(clock.caller(), part[None]))
        try:
            return original(*args, **kwargs)
        finally:
            clock.leave()

    timed.__profiled__ = True
    setattr(owner, name, timed)


def install(clock: Clock, parts: dict[str, tuple[str, ...]], forward: bool,
            classes: tuple[type, ...] = ()) -> list[str]:
    """Wrap every target of `parts` this code base has (and the EnvRunner's forward passes); the ones found."""
    found = []
    for part, targets in parts.items():
        for target in targets:
            where = resolve(target, classes)
            if where is not None:
                wrap(clock, part, *where)
                found.append(target)
    if forward:
        for target in FORWARD:
            where = resolve(target)
            if where is not None:
                wrap(clock, FORWARD_BY_CALLER, *where)
                found.append(target)
    return found


def time_sample_calls(clock: Clock) -> None:
    """Time the body of every EnvRunner ``sample()`` call as `SAMPLE_CALL`: the runner's own sample timer (RLlib's
    ``SAMPLE_TIMER``, which `launch.training.sampler.BatchedLudoEnvRunner.sample` holds around it) is wrapped."""
    from ray.rllib.utils.metrics import SAMPLE_TIMER
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    original = MetricsLogger.log_time
    if getattr(original, "__profiled__", False):
        return

    class Timed:
        def __init__(self, inner):
            self.inner = inner

        def __enter__(self):
            self.start = time.perf_counter()
            clock.enter(SAMPLE_CALL)
            return self.inner.__enter__()

        def __exit__(self, *exc):
            try:
                return self.inner.__exit__(*exc)
            finally:
                clock.leave()
                clock.inclusive[SAMPLE_CALL] += time.perf_counter() - self.start

    @functools.wraps(original)
    def log_time(self, key, *args, **kwargs):
        inner = original(self, key, *args, **kwargs)
        return Timed(inner) if key == SAMPLE_TIMER else inner

    log_time.__profiled__ = True
    MetricsLogger.log_time = log_time


def runner_install(runner) -> list[str]:
    """Run in each remote EnvRunner's process: a clock of its own, kept on the runner."""
    if getattr(runner, "_iteration_clock", None) is None:
        runner._iteration_clock = Clock()
    time_sample_calls(runner._iteration_clock)
    return install(runner._iteration_clock, RUNNER_PARTS, forward=True, classes=type(runner).__mro__)


def runner_reset(runner) -> None:
    runner._iteration_clock.reset()


def runner_totals(runner) -> dict[str, Any]:
    return runner._iteration_clock.totals()


# ---------------------------------------------------------------- the table
def table(driver: dict[str, float], runners: list[dict[str, Any]], wall: float, iterations: int) -> dict[str, Any]:
    """Both tables (module docstring) from the seconds of each part over the timed iterations (`runners`: each
    remote EnvRunner's `Clock.totals`)."""
    sampling: dict[str, float] = defaultdict(float)
    for seconds in [r["seconds"] for r in runners] or [driver]:
        for part, value in seconds.items():
            if part in RUNNER_PARTS or part in FORWARD_BY_CALLER.values() or part == SAMPLE_CALL:
                sampling[part] += value
    wait = driver.get("waiting for the EnvRunners' samples", 0.0)
    if runners:  # remote EnvRunners: the wait is their sample() calls (in parallel) and the round trip around them
        sampling.pop(SAMPLE_CALL, None)  # its own time is the wait for a prefetched sample: not work
        call = sum(r["inclusive"].get(SAMPLE_CALL, 0.0) for r in runners) / len(runners)
        rows = [("waiting: the EnvRunners' sample() calls (the sample not played yet)", min(call, wait)),
                ("waiting: Ray's round trip around them (transfer)", max(0.0, wait - call))]
    else:  # the local EnvRunner samples inside the wait: its parts are the driver's
        rows = [("sampling: RLlib's sampling call around the EnvRunner", wait)]
        rows += [(f"sampling: {part}", value) for part, value in sorted(sampling.items(), key=lambda kv: -kv[1])]
    rows += [(part, driver.get(part, 0.0)) for part in DRIVER_PARTS if part != "waiting for the EnvRunners' samples"]
    rows.append(("other (RLlib's bookkeeping, metrics, results)", wall - sum(driver.values())))
    busy = sum(sampling.values())
    return {"iterations": iterations, "wall_s": wall, "seconds_per_iteration": wall / iterations,
            "driver": [{"part": p, "seconds_per_iteration": s / iterations, "share": s / wall} for p, s in rows],
            "runner": [{"part": p, "seconds_per_iteration": s / iterations, "share": s / wall}
                       for p, s in sorted(sampling.items(), key=lambda kv: -kv[1])],
            "runner_busy_share": busy / wall, "runners": len(runners)}


def print_table(summary: dict[str, Any], heading: str) -> None:
    print(f"\n{heading}\n{summary['iterations']} iterations timed, {summary['seconds_per_iteration']:.2f} s each "
          f"(wall)\n")
    print(f"{'driver: the iteration':<70}{'s/iter':>8}{'share':>8}")
    for row in summary["driver"]:
        print(f"{row['part']:<70}{row['seconds_per_iteration']:>8.3f}{100 * row['share']:>7.1f}%")
    if not summary["runners"]:
        return
    where = f"{summary['runners']} remote EnvRunner(s), beside the learner with prefetch (EnvRunner seconds)"
    print(f"\n{'sampling: ' + where:<70}{'s/iter':>8}{'share':>8}")
    for row in summary["runner"]:
        print(f"{row['part']:<70}{row['seconds_per_iteration']:>8.3f}{100 * row['share']:>7.1f}%")
    print(f"{'EnvRunners busy':<70}{'':>8}{100 * summary['runner_busy_share']:>7.1f}%")


# ---------------------------------------------------------------- command
def main(argv: list[str]) -> None:
    overrides = [a for a in argv if "=" in a and not a.startswith("-")]
    parser = OneLineParser(description=__doc__.splitlines()[0],
                           epilog="Other arguments key=value are launch/train.py overrides (on +exp=ppo_selfplay).")
    parser.add_argument("--iterations", type=positive(int), default=5, help="iterations timed")
    parser.add_argument("--warmup", type=int, default=2, help="untimed iterations first (compiling, warming up)")
    parser.add_argument("--snapshots", type=int, default=-1,
                        help="snapshot slots filled with main's weights first (-1: all of league.max_snapshots)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the tables and raw seconds here")
    args = parser.parse_args([a for a in argv if a not in overrides])
    if args.warmup < 0:
        parser.error(f"argument --warmup: {args.warmup} is not allowed: give 0 or more")
    from benchmarks.train_throughput import Side, compose_config

    try:
        cfg = compose_config("ppo", overrides)
    except (UserError, ValueError) as err:
        fail(err)
    import ray

    from launch.training import build
    from launch.training.trainers.rllib import seed_everything

    ray.init(address=cfg.resources.ray_address, logging_level="ERROR", include_dashboard=False,
             configure_logging=True, log_to_driver=False,
             num_cpus=None if cfg.resources.ray_address else max(os.cpu_count() or 1, cfg.resources.env_runners + 1))
    try:
        seed_everything(cfg.seed)
        pool = build.make_pool(cfg)
        side = Side("profile", build.build_algorithm_config(cfg, pool), pool)
        snapshots = cfg.league.max_snapshots if args.snapshots < 0 else min(args.snapshots, cfg.league.max_snapshots)
        print(f"warming up: {args.warmup} iterations", flush=True)
        side.warm_up(snapshots, args.warmup, 0, cfg)
        clock = Clock()
        remote = cfg.resources.env_runners > 0
        found = install(clock, DRIVER_PARTS, forward=False)
        group = side.algo.env_runner_group
        if remote:
            found += group.foreach_env_runner(runner_install, local_env_runner=False)[0]
        else:
            time_sample_calls(clock)
            found += install(clock, RUNNER_PARTS, forward=True)
        side.train()  # a sample already under way was played by unwrapped code
        clock.reset()
        if remote:
            group.foreach_env_runner(runner_reset, local_env_runner=False)
        walls = []
        for k in range(args.iterations):
            start = time.perf_counter()
            side.train()
            walls.append(time.perf_counter() - start)
            print(f"iteration {k + 1}/{args.iterations}: {walls[-1]:.2f} s", flush=True)
        runners = group.foreach_env_runner(runner_totals, local_env_runner=False) if remote else []
        steps = cfg.algo.train_batch_size
        side.stop()
    finally:
        ray.shutdown()
    summary = table(dict(clock.seconds), runners, sum(walls), len(walls))
    summary.update({"overrides": overrides, "cpus": os.cpu_count(), "train_batch_size": steps,
                    "median_iteration_s": statistics.median(walls), "env_steps_per_s": steps * len(walls) / sum(walls),
                    "wrapped": sorted(set(found))})
    print_table(summary, f"+exp=ppo_selfplay {' '.join(overrides)}".strip()
                + f", {os.cpu_count()} CPUs, {steps:,} env steps an iteration, "
                  f"{summary['env_steps_per_s']:,.0f} env steps/s over the timed iterations")
    if args.json:
        args.json.write_text(json.dumps({**summary, "driver_seconds": dict(clock.seconds),
                                         "runner_seconds": runners}, indent=1) + "\n")
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except UserError as err:
        fail(err)
