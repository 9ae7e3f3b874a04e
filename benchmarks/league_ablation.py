"""Does the league train a stronger, harder-to-exploit main than plain self-play? PPO at equal env steps under
several league configurations ("arms"), every final main compared three ways (docs/pages/results/, the ablation).

    python benchmarks/league_ablation.py                                    # 8M steps, classic, seeds 0 1, 3 arms
    python benchmarks/league_ablation.py --variant pyludo --arms pfsp alphastar
    python benchmarks/league_ablation.py --steps 1000000 --seeds 0 --arms selfplay pfsp --out outputs/ablation_small
    python benchmarks/league_ablation.py --arm big_pool="league.max_snapshots=16"   # an arm of your own

Arms (`ARMS`; ``--arm NAME=OVERRIDES`` adds one, overrides space-separated ``launch/train.py`` ones):
  selfplay   plain self-play: every opponent seat is main itself (``league=selfplay``: ``league.main_weight=1``,
             the other shares 0)
  pfsp       today's default league: main, its snapshots and seed bots drawn by PFSP
  alphastar  the AlphaStar league: main, main exploiters and league exploiters (``league=alphastar``)

Steps, each resumable (a rerun skips what is done and resumes a killed training):
  1. train    ``launch/train.py +exp=ppo_selfplay variant=<v> seed=<s> budget.env_steps=<steps>`` per arm
              and seed, one after the other, into ``<out>/runs/<arm>_s<seed>``;
  2. panel    each final main (the run's newest checkpoint) against 3 copies of each panel bot
              (random, hybrid, heuristic000; ``--games`` each, 95% Wilson intervals), with how many of the run's
              env steps were main's own decisions (self-play's main holds every seat; a league's, fewer) and
              how often each of its exploiters was frozen into the league;
  3. exploit  each main's exploitability (``benchmarks/exploitability.py``: a PPO best response against 3
              frozen copies, ``--exploit-decisions`` of its own decisions), skipped with ``--exploit-decisions 0``;
  4. cross    a round robin of the mains in mixed line-ups (every set of 4 mains, or every main added to the
              line-up of all of them when there are fewer), seats rotated, ``--cross-games`` per line-up: each
              main's and each arm's win rate with its interval, and openskill ratings over all those games.

Everything lands in ``<out>/ablation.json``; the tables print as markdown.
"""
from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from launch.cli import OneLineParser, UserError, benchmark_rules, fail, input_errors, positive
from launch.training.runs import SUMMARY, exploiters_frozen, trained_so_far
from policies.league.ratings import LEAGUE_TAU, ordinal, rate_games
from policies.tournament import play_tournament, wilson_interval

ROOT = Path(__file__).resolve().parents[1]
ARMS = {
    "selfplay": ["league=selfplay"],
    "pfsp": [],
    "alphastar": ["league=alphastar"],
}
PANEL = ("random", "hybrid", "heuristic000")
EXPERIMENT = "+exp=ppo_selfplay"
PLAYERS = 4


def train(out: Path, arm: str, overrides: list[str], seed: int, args) -> Path:
    """Train (or resume, or skip when finished) one arm at one seed; the run folder."""
    run = out / "runs" / f"{arm}_s{seed}"
    if (run / SUMMARY).is_file():
        print(f"train {run.name}: finished before, kept", flush=True)
        return run
    command = [sys.executable, str(ROOT / "launch" / "train.py")]
    if run.is_dir():
        command += [f"resume={run}"]
    else:
        command += [EXPERIMENT, f"variant={args.variant}", f"seed={seed}", f"budget.env_steps={args.steps}",
                    "budget.minutes=0", f"hydra.run.dir={run}", *overrides]
    print(f"train {run.name}: {' '.join(command[1:])}", flush=True)
    with open(out / f"{run.name}.log", "a") as log:
        done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, check=False)
    if done.returncode != 0 or not (run / SUMMARY).is_file():
        raise UserError(f"training {run.name} stopped with status {done.returncode}: see {out / run.name}.log")
    return run


def rate(row) -> dict[str, Any]:
    low, high = row.win_rate_ci95
    return {"win_rate": row.win_rate, "ci95": [low, high], "games": row.games}


def panel(main: str, rules, args) -> dict[str, Any]:
    results = {}
    for bot in PANEL:
        result = play_tournament([main] + [bot] * (PLAYERS - 1), args.games, rules, args.seed, rate=False)
        results[bot] = rate(next(r for r in result.rows if r.player == main))
    return results


def exploitability(label: str, main: str, out: Path, args) -> dict[str, Any] | None:
    """The main's exploitability at ``--exploit-decisions`` (kept from an earlier run of this step)."""
    if not args.exploit_decisions:
        return None
    folder = out / "exploitability" / label
    report = folder / "exploitability.json"
    if not report.is_file():
        command = [sys.executable, str(ROOT / "benchmarks" / "exploitability.py"), main,
                   f"--decisions={args.exploit_decisions}", f"--games={args.games}", f"--seed={args.seed}",
                   f"--out={folder}"]
        if (folder / "best_response").exists():  # a killed measurement starts over
            shutil.rmtree(folder)
        with open(out / f"exploitability_{label}.log", "w") as log:
            done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, check=False)
        if done.returncode != 0 or not report.is_file():
            raise UserError(f"exploitability of {label} stopped with status {done.returncode}: "
                            f"see {out / f'exploitability_{label}.log'}")
    return json.loads(report.read_text())[-1]


def line_ups(mains: list[str]) -> list[list[str]]:
    """Every set of `PLAYERS` mains; with fewer mains than seats, all of them plus each one again."""
    if len(mains) >= PLAYERS:
        return [list(c) for c in itertools.combinations(mains, PLAYERS)]
    return [mains + [m] * (PLAYERS - len(mains)) for m in mains]


def cross_play(mains: dict[str, str], arm_of: dict[str, str], rules, args) -> dict[str, Any]:
    """Mixed line-ups of the mains (label -> spec), seats rotated: win rates per main and per arm, openskill."""
    wins = {label: [0, 0] for label in mains}
    games = []
    for line_up in line_ups(list(mains)):
        result = play_tournament([mains[label] for label in line_up], args.cross_games, rules, args.seed,
                                 rate=False)
        for row in result.rows:
            label = next(label for label in line_up if mains[label] == row.player)
            wins[label][0] += row.wins
            wins[label][1] += row.games
        # One rating name per seat: a main seated twice (fewer mains than seats) plays as two entries.
        names = [f"{label}#{line_up[:i].count(label) + 1}" if line_up.count(label) > 1 else label
                 for i, label in enumerate(line_up)]
        for places, finished in zip(result.places.tolist(), result.finished.tolist()):
            if finished:
                games.append((names, places))
    ratings = rate_games(games, tau=LEAGUE_TAU)  # frozen agents: every game counts, sigma falls with games
    per_main = {label: {"wins": w, "games": n, "win_rate": w / max(1, n), "ci95": list(wilson_interval(w, n)),
                        "mu": ratings.get(label, (None, None))[0], "sigma": ratings.get(label, (None, None))[1]}
                for label, (w, n) in wins.items()}
    per_arm = {}
    for arm in dict.fromkeys(arm_of.values()):
        w = sum(wins[label][0] for label in mains if arm_of[label] == arm)
        n = sum(wins[label][1] for label in mains if arm_of[label] == arm)
        per_arm[arm] = {"wins": w, "games": n, "win_rate": w / max(1, n), "ci95": list(wilson_interval(w, n))}
    return {"line_ups": line_ups(list(mains)), "games_per_line_up": args.cross_games, "per_main": per_main,
            "per_arm": per_arm, "ratings": {k: [mu, sigma, ordinal(mu, sigma)] for k, (mu, sigma) in ratings.items()}}


def percent(cell: dict[str, Any]) -> str:
    low, high = cell["ci95"]
    return f"{cell['win_rate']:.1%} [{low:.1%}, {high:.1%}]"


def print_tables(report: dict[str, Any]) -> None:
    print(f"\n{report['variant']}, {report['steps']:,} env steps per run (unless an arm sets its own), "
          f"seeds {report['seeds']}\n")
    print("| main | main's decisions | " + " | ".join(f"vs 3 {bot}" for bot in PANEL)
          + " | exploitability, points | cross-play | mu ± sigma |")
    print("| --- |" + " --- |" * (len(PANEL) + 4))
    cross = report["cross_play"]["per_main"] if report.get("cross_play") else {}
    for label, main in report["mains"].items():
        exploit = main.get("exploitability")
        exploit_text = (f"{100 * exploit['exploitability']:+.1f} [{100 * exploit['exploitability_ci95'][0]:+.1f}, "
                        f"{100 * exploit['exploitability_ci95'][1]:+.1f}]" if exploit else "not measured")
        cell = cross.get(label)
        cross_text = percent(cell) if cell else ""
        rating = f"{cell['mu']:.2f} ± {cell['sigma']:.2f}" if cell and cell["mu"] is not None else ""
        decisions = main.get("main_decisions")
        share = f" ({decisions / main['env_steps']:.0%} of {main['env_steps'] / 1e6:.1f}M env steps)" \
            if decisions and main.get("env_steps") else ""
        decisions_text = f"{decisions / 1e6:.2f}M{share}" if decisions else "not recorded"
        print(f"| {label} | {decisions_text} | " + " | ".join(percent(main["panel"][bot]) for bot in PANEL)
              + f" | {exploit_text} | {cross_text} | {rating} |")
    frozen = {label: main["exploiters_frozen"] for label, main in report["mains"].items()
              if main.get("exploiters_frozen")}
    if frozen:  # a league with exploiters that never froze one is a league without them
        print("\nExploiters frozen into the league: " + "; ".join(
            f"{label} " + ", ".join(f"{module} {count}x" for module, count in counts.items())
            for label, counts in frozen.items()))
    if report.get("cross_play"):
        print("\n| arm | cross-play win rate [95% CI] | games |\n| --- | --- | --- |")
        for arm, cell in report["cross_play"]["per_arm"].items():
            print(f"| {arm} | {percent(cell)} | {cell['games']:,} |")


def parse(argv: list[str]):
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", nargs="+", default=list(ARMS), help=f"arms to run (known: {', '.join(ARMS)})")
    parser.add_argument("--arm", action="append", default=[], metavar="NAME=OVERRIDES",
                        help="an arm of your own: launch/train.py overrides, space-separated")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1], help="training seeds per arm")
    parser.add_argument("--steps", type=positive(int), default=8_000_000, help="env steps per training run")
    parser.add_argument("--variant", default="classic", help="rule set (conf/variant)")
    parser.add_argument("--games", type=positive(int), default=5000, help="games per panel opponent")
    parser.add_argument("--exploit-decisions", type=int, default=500_000,
                        help="best-response decisions per exploitability figure; 0: skip that step")
    parser.add_argument("--cross-games", type=positive(int), default=2000, help="games per cross-play line-up")
    parser.add_argument("--seed", type=int, default=1_000_003, help="dice seed of every evaluation game")
    parser.add_argument("--out", default="outputs/ablation", help="folder for the runs, logs and ablation.json")
    args = parser.parse_args(argv)
    arms = {}
    for name in args.arms:
        if name not in ARMS:
            raise UserError(f"--arms: unknown arm {name!r}: choose from {', '.join(ARMS)} or add one with --arm")
        arms[name] = ARMS[name]
    for text in args.arm:
        name, eq, overrides = text.partition("=")
        if not eq or not name.isidentifier():
            raise UserError(f"--arm {text!r}: give NAME=OVERRIDES, e.g. --arm big_pool=\"league.max_snapshots=16\"")
        arms[name] = overrides.split()
    if args.exploit_decisions < 0:
        raise UserError(f"--exploit-decisions={args.exploit_decisions} is not allowed: give 0 (skip) or more")
    return args, arms


def main(argv: list[str]) -> None:
    args, arms = parse(argv)
    rules, _ = benchmark_rules(args.variant, [], players=PLAYERS)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = {f"{arm}_s{seed}": (arm, train(out, arm, overrides, seed, args))
            for arm, overrides in arms.items() for seed in args.seeds}
    mains = {label: f"ckpt:{run}" for label, (_, run) in runs.items()}
    report: dict[str, Any] = {"variant": args.variant, "steps": args.steps, "seeds": args.seeds, "arms": arms,
                              "mains": {}}
    for label, spec in mains.items():
        print(f"panel and exploitability of {label}", flush=True)
        # At equal env steps a league's main takes fewer decisions than self-play's, which holds every seat.
        env_steps, decisions = trained_so_far(runs[label][1])
        report["mains"][label] = {"spec": spec, "arm": runs[label][0], "env_steps": env_steps,
                                  "main_decisions": decisions,
                                  "exploiters_frozen": exploiters_frozen(runs[label][1]),
                                  "panel": panel(spec, rules, args),
                                  "exploitability": exploitability(label, spec, out, args)}
    if len(mains) > 1:
        print("cross-play", flush=True)
        report["cross_play"] = cross_play(mains, {label: arm for label, (arm, _) in runs.items()}, rules, args)
    report["command"] = " ".join(["python", "benchmarks/league_ablation.py", *argv])
    tmp = out / "ablation.json.tmp"
    tmp.write_text(json.dumps(report, indent=2))
    os.replace(tmp, out / "ablation.json")
    print_tables(report)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except input_errors() as err:
        fail(err)
