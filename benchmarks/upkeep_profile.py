"""Where a training run's stalls go: ``launch/train.py`` run in this process, with a clock on each part of the
upkeep between two ``algo.train()`` calls.

    python benchmarks/upkeep_profile.py --out profile.json -- +exp=ppo_selfplay budget.minutes=2.5
    python benchmarks/upkeep_profile.py --out profile.json -- +exp=dqn_selfplay budget.minutes=2.5 upkeep.background=false
    python benchmarks/upkeep_profile.py --table profile.json                 # the table of an earlier run again

Everything after ``--`` is ``launch/train.py``'s command line. The script wraps the functions in `PARTS` (a
part whose function this code base does not have is left out, so the same script profiles older commits:
``PYTHONPATH=<an older tree> python benchmarks/upkeep_profile.py ...``), runs the training as the command
would, and writes one record per iteration but the last: the seconds of its ``algo.train()``, the stall after
it (until the next ``algo.train()`` starts) and the seconds of each part inside that
stall. It prints the table of the stalls that did upkeep (those with a part over `UPKEEP_MIN_S`): each part's
median and mean seconds per stall and its share of the stalls' time and of the wall time.

Only what runs in the driver's main thread is timed: with the upkeep in the background
(``upkeep.background=true``) the table is what is left on the training path (the capture of a checkpoint's
copy, waits for a job still running), and the background jobs' own seconds (in the league's worker, in the
checkpoint thread) are not in it.
"""
from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import json
import os
import runpy
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")


PARTS: dict[str, tuple[str, ...]] = {
    "snapshot export": ("launch.training.trainers.rllib:take_snapshot",),
    "panel evaluation": ("launch.training.trainers.rllib:PanelEvaluator.run",
                         "launch.training.trainers.league_upkeep:LeagueWorker.evaluate"),
    "rating round": ("launch.training.trainers.rllib:LeagueSelfPlay.rating_round",
                     "launch.training.trainers.league_upkeep:LeagueWorker.rating_round"),
    "round: loading policies": ("policies.league.league:League.player",),
    "round: playing games": ("policies.league.league:play_lineup",),
    "round: updating ratings": ("policies.league.league:rate_games",),
    "league standings for the log": ("policies.league.league:League.main_standing",
                                     "launch.training.trainers.league_upkeep:standings"),
    "checkpoint": ("launch.training.trainers.rllib:save_checkpoint",
                   "launch.training.trainers.rllib:LeagueSelfPlay.checkpoint"),
    "checkpoint: RLlib's save_to_path": ("ray.rllib.algorithms.algorithm:Algorithm.save_to_path",),
    "checkpoint: the signature": ("launch.training.runs:sign_checkpoint",),
    "checkpoint: the consistent copy": ("launch.training.trainers.rllib:LeagueSelfPlay.capture",),
    "waiting for a background job": ("launch.training.upkeep:BackgroundJob.wait",),
    "new matchmaker": ("launch.training.trainers.rllib:install_matchmaker",),
    "best policy": ("launch.training.loop:keep_best",),
    "metrics row and wandb": ("launch.training.runs:WandbLogger.log", "launch.training.runs:RunDir.append_metrics"),
}
"""Part -> the functions (``module:attribute``) whose time it is; a ``round:`` part is inside the rating round,
a ``checkpoint:`` part inside the checkpoint."""
RESTS = {"round: SQLite writes and the rest": ("rating round", "round: "),
         "checkpoint: policy/, run state, rename, pruning": ("checkpoint", "checkpoint: ")}
"""Rows the table works out: what is left of a part once the parts inside it are taken away (the rating round's
transaction, the line-ups' schedule; a checkpoint's policy folder, run state, rename and pruning)."""
UPKEEP_MIN_S = 0.05
"""A stall with a part this long did upkeep (an iteration without any is only the loop's own bookkeeping)."""


class Clock:
    """Seconds of each part in the current stall (the outermost call of a function that calls itself)."""

    def __init__(self):
        self.records: list[dict[str, Any]] = []
        self.parts: dict[str, float] = defaultdict(float)
        self.depth: dict[str, int] = defaultdict(int)
        self.train_started: float | None = None
        self.train_ended: float | None = None
        self.train_s = 0.0

    def wrap(self, part: str, owner: Any, attribute: str) -> None:
        original = getattr(owner, attribute)
        key = f"{part}|{getattr(owner, '__name__', owner)}.{attribute}"

        @functools.wraps(original)
        def timed(*args, **kwargs):
            if threading.current_thread() is not threading.main_thread():  # a background thread's, not a stall's
                return original(*args, **kwargs)
            self.depth[key] += 1
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.depth[key] -= 1
                if self.depth[key] == 0:
                    self.parts[part] += time.perf_counter() - start

        setattr(owner, attribute, timed)

    def wrap_train(self, owner: Any) -> None:
        original = owner.train

        @functools.wraps(original)
        def train(algo, *args, **kwargs):
            start = time.perf_counter()
            self.close_stall(start)
            try:
                return original(algo, *args, **kwargs)
            finally:
                self.train_ended = time.perf_counter()
                self.train_s = self.train_ended - start

        owner.train = train

    def close_stall(self, now: float) -> None:
        """The stall since the last ``algo.train()`` ended is over: one record."""
        if self.train_ended is not None:
            self.records.append({"train_s": self.train_s, "stall_s": now - self.train_ended,
                                 "parts": dict(self.parts)})
        self.parts.clear()
        self.train_ended = None


def install(clock: Clock) -> list[str]:
    """Wrap every part this code base has; returns the ``module:attribute`` names found."""
    found = []
    for part, targets in PARTS.items():
        for target in targets:
            module_name, _, attribute = target.partition(":")
            try:
                owner = importlib.import_module(module_name)
            except ImportError:
                continue
            *path, name = attribute.split(".")
            for step in path:
                owner = getattr(owner, step, None)
            if owner is None or not hasattr(owner, name):
                continue
            clock.wrap(part, owner, name)
            found.append(target)
    from ray.rllib.algorithms.algorithm import Algorithm

    clock.wrap_train(Algorithm)
    return found


def table(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The stalls that did upkeep, split by part (module docstring)."""
    skip_first = records[1:]  # the first iteration compiles and warms up
    upkeep = [r for r in skip_first if any(v >= UPKEEP_MIN_S for v in r["parts"].values())]
    wall = sum(r["train_s"] + r["stall_s"] for r in skip_first)
    stall_total = sum(r["stall_s"] for r in upkeep)
    rows = []
    order = list(PARTS)
    for rest, (_, inside) in RESTS.items():  # after the last part inside its whole
        order.insert(max(i for i, part in enumerate(order) if part.startswith(inside)) + 1, rest)
    for part in [*order, "other"]:
        if part == "other":
            values = [r["stall_s"] - sum(v for k, v in r["parts"].items() if ":" not in k) for r in upkeep]
        elif part in RESTS:
            whole, inside = RESTS[part]
            values = [r["parts"].get(whole, 0.0) - sum(v for k, v in r["parts"].items() if k.startswith(inside))
                      for r in upkeep]
        else:
            values = [r["parts"].get(part, 0.0) for r in upkeep]
        if not any(values):
            continue
        rows.append({"part": part, "median_s": statistics.median(values), "mean_s": statistics.fmean(values),
                     "share_of_stalls": sum(values) / stall_total if stall_total else 0.0,
                     "share_of_wall": sum(values) / wall if wall else 0.0})
    train = [r["train_s"] for r in skip_first]
    return {"iterations": len(skip_first), "upkeep_stalls": len(upkeep),
            "median_train_s": statistics.median(train) if train else None,
            "median_stall_s": statistics.median([r["stall_s"] for r in upkeep]) if upkeep else None,
            "stalls_share_of_wall": stall_total / wall if wall else 0.0,
            "all_stalls_share_of_wall": sum(r["stall_s"] for r in skip_first) / wall if wall else 0.0,
            "parts": rows}


def print_table(summary: dict[str, Any]) -> None:
    print(f"\n{summary['iterations']} iterations after the first, {summary['upkeep_stalls']} of them with upkeep; "
          f"median algo.train() {summary['median_train_s'] or 0:.2f} s, median upkeep stall "
          f"{summary['median_stall_s'] or 0:.2f} s; upkeep stalls {100 * summary['stalls_share_of_wall']:.1f}% "
          f"of the wall time (all time outside algo.train(): {100 * summary['all_stalls_share_of_wall']:.1f}%)")
    print(f"{'part':<48}{'median s':>10}{'mean s':>10}{'of stalls':>11}{'of wall':>10}")
    for row in summary["parts"]:
        print(f"{row['part']:<48}{row['median_s']:>10.3f}{row['mean_s']:>10.3f}"
              f"{100 * row['share_of_stalls']:>10.1f}%{100 * row['share_of_wall']:>9.1f}%")


def main(argv: list[str]) -> None:
    from launch.cli import OneLineParser

    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="the JSON file of records and the table")
    parser.add_argument("--quiet", action="store_true", help="no table on stdout")
    parser.add_argument("--table", type=Path, metavar="PROFILE", help="print the table of an earlier profile and stop")
    parser.add_argument("train_args", nargs=argparse.REMAINDER, metavar="-- TRAIN_ARGS",
                        help="launch/train.py's command line, after --")
    args = parser.parse_args(argv)
    if args.table is not None:
        print_table(table(json.loads(args.table.read_text())["records"]))
        return
    train_args = args.train_args[1:] if args.train_args[:1] == ["--"] else args.train_args
    if args.out is None or not train_args:
        parser.error("give --out FILE and launch/train.py's arguments after --, e.g. "
                     "--out profile.json -- +exp=ppo_selfplay budget.minutes=2.5")
    clock = Clock()
    found = install(clock)
    script = importlib.util.find_spec("launch.train").origin  # the tree on the path: this one or an older one
    sys.argv = [script, *train_args]
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")  # as the command runs, so Hydra finds conf/ beside it
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    finally:  # the stall after the last iteration holds the final evaluation and summary: not training's
        summary = table(clock.records)
        args.out.write_text(json.dumps({"argv": train_args, "wrapped": found, "records": clock.records,
                                        "table": summary}, indent=1) + "\n")
        if not args.quiet:
            print_table(summary)
    raise SystemExit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
