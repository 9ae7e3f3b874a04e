"""What compute buys: the strength of the default PPO main against its env steps, one resumed run per rule set.

    python benchmarks/scaling.py                                    # pyludo and classic, 2M ... 64M env steps
    python benchmarks/scaling.py --variants pyludo --only train     # the trainings alone; measure later
    python benchmarks/scaling.py --only measure                     # measure what is trained, train nothing
    python benchmarks/scaling.py --only report --plot docs/pages/results/scaling.png --table docs/pages/results/scaling-table.md
    python benchmarks/scaling.py resources.env_runners=2            # launch/train.py overrides for every start

Each rule set's run (the strength study among the docs' results pages):

  train    one default ``launch/train.py +exp=ppo_selfplay variant=<v> seed=<s>`` run in ``<out>/runs/<v>_s<s>``,
           taken from milestone to milestone (``--milestones``, default 2, 4, 8, 16, 32 and 64M env steps): each
           segment resumes the same run folder with a larger ``budget.env_steps`` and ``budget.minutes=0`` (the
           experiment's 60-minute cap would otherwise stop a long run; a resume keeps the run's other settings).
           Main's policy at each milestone is kept in ``<out>/milestones/<v>_s<s>/<milestone>/`` (its ``policy/``
           folder, ``policy.json`` + ``weights.pt``, with the checkpoint's ``run_state.json``; ``ckpt:`` plays it).
           Each segment's wall time (the command's, start-up and evaluations included) and its trained env steps
           per second (over the loop's own training clock) are recorded. A second run per rule set
           (``--second-seeds``, default seed 1) goes only to ``--second-seeds-at`` (8M and 32M).
  measure  every milestone against 3 random, 3 hybrid and 3 heuristic000 (``--games`` each, 5,000, on the same
           dice for every milestone: ``--seed``), and in a 1-against-3 cross-play against the ``--reference``
           milestone of the same run (8M; ``--cross-games``, 10,000, seats rotated; parity is 25%), each with its
           95% Wilson interval (`policies.league.evaluation.measure_strength`, the same code as
           ``benchmarks/levers.py``).
  report   a markdown table (``--table``) and a plot against log-scaled env steps with the intervals drawn
           (``--plot``, needs matplotlib), from the results file.

Everything is resumable and idempotent: results go to ``<out>/scaling.json`` (written atomically after every
step), a rerun skips the segments and measurements that are done (a measurement is redone only when its games,
seed or reference change) and resumes a training that was stopped (Ctrl-C or SIGTERM: the training saves a
checkpoint first; a kill -9 loses at most the iterations since its last checkpoint). One training at a time, and
one driver per ``--out`` (a second one is refused). A milestone the run has passed without keeping its policy
(a milestone added later) cannot be measured; it is named and left out.
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from launch.cli import (
    INTERRUPTED,
    OneLineParser,
    UserError,
    benchmark_rules,
    fail,
    input_errors,
    positive,
    write_text,
)
from launch.training.runs import RUN_STATE, RunDir, train_to_env_steps, trained_so_far
from policies.checkpoints import POLICY_DIR
from policies.league.evaluation import CROSS_PLAY, STRENGTH_PANEL, measure_strength, win_record

EXPERIMENT = "+exp=ppo_selfplay"
PLAYERS = 4
RESULTS = "scaling.json"
FORMAT = "ludo-league-scaling/1"
MILLION = 1_000_000
DEFAULT_MILESTONES = tuple(m * MILLION for m in (2, 4, 8, 16, 32, 64))


# ---------------------------------------------------------------- env steps as people write them
def env_steps(text: str) -> int:
    """``8M``, ``500k``, ``2e6`` or ``8000000`` as a whole number of env steps > 0 (an argparse ``type=``)."""
    import argparse

    scale = {"k": 1_000, "m": MILLION}.get(text[-1:].lower(), 1)
    number = text[:-1] if scale > 1 else text
    try:
        value = float(number) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of env steps (e.g. 8M, 500k, 8000000)") from None
    if not math.isfinite(value) or value < 1 or value != int(value):
        raise argparse.ArgumentTypeError(f"{text} is not allowed: give a whole number of env steps > 0")
    return int(value)


def steps_label(steps: int) -> str:
    """``64M``, ``500k``, ``2.5M`` or the plain number: a milestone's name (folder, table, plot)."""
    for unit, size in (("M", MILLION), ("k", 1_000)):
        if steps >= size and (steps * 10) % size == 0:
            return f"{steps / size:g}{unit}"
    return str(steps)


# ---------------------------------------------------------------- the results file
def read_results(file: Path, fmt: str, table: str, **empty: Any) -> dict[str, Any]:
    """A benchmark's results file of format `fmt`, whose entries are in `table`, or a new one with `empty`'s keys;
    a file that is not such a file, or cannot be read, is one line."""
    if not file.is_file():
        return {"format": fmt, table: {}, **empty}
    try:
        results = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(f"{file}: cannot read it ({err}): move it away to start the results afresh") from None
    if not isinstance(results, dict) or results.get("format") != fmt or not isinstance(results.get(table), dict):
        raise UserError(f"{file}: not a {fmt} results file: give another --out")
    return results


def load_results(out: Path) -> dict[str, Any]:
    """``<out>/scaling.json``, or a new one; a file that is not this benchmark's is one line."""
    return read_results(out / RESULTS, FORMAT, "runs", commands=[])


def save_results(out: Path, results: dict[str, Any]) -> None:
    write_text(out / RESULTS, json.dumps(results, indent=1) + "\n")


@contextmanager
def only_driver(out: Path) -> Iterator[None]:
    """Hold ``<out>/.lock`` while this driver runs: a second driver on the same folder is refused in one line."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"{out}: another benchmark driver is working in it now: wait for it to finish, or give "
                            "another --out") from None
        yield


# ---------------------------------------------------------------- runs and milestones
class Run:
    """One training run of the benchmark: a rule set, a seed, the milestones it goes to, its folders and record."""

    def __init__(self, out: Path, variant: str, seed: int, milestones: list[int], results: dict[str, Any]):
        self.out, self.variant, self.seed, self.milestones = out, variant, seed, sorted(milestones)
        self.label = f"{variant}_s{seed}"
        self.folder = out / "runs" / self.label
        self.log = out / "logs" / f"{self.label}.log"
        self.record = results["runs"].setdefault(self.label, {"variant": variant, "seed": seed, "milestones": {}})

    def milestone_folder(self, steps: int) -> Path:
        """Where the run's policy at `steps` is kept: a copy of that checkpoint's policy/ and run state."""
        return self.out / "milestones" / self.label / steps_label(steps)

    def kept(self, steps: int) -> dict[str, Any] | None:
        return self.record["milestones"].get(str(steps))

    def spec(self, steps: int) -> str:
        return f"ckpt:{self.milestone_folder(steps)}"

    def state(self) -> tuple[int, float]:
        """(env steps, training seconds) of the run's newest checkpoint; (0, 0) before it has one."""
        checkpoints = RunDir(self.folder).checkpoint_dirs()
        if not checkpoints:
            return 0, 0.0
        state = RunDir.read_state(checkpoints[-1])
        return state.env_steps, state.elapsed_s


def keep_checkpoint_policy(checkpoint: Path, folder: Path) -> None:
    """Copy a checkpoint's policy/ and run state into `folder`, atomically: a policy a row or milestone names that
    stays as it is when its run trains on (a ``ckpt:`` of the run would follow the newest checkpoint)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".{folder.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(checkpoint / POLICY_DIR, tmp / POLICY_DIR)
    shutil.copy2(checkpoint / RUN_STATE, tmp / RUN_STATE)
    if folder.exists():
        shutil.rmtree(folder)
    os.rename(tmp, folder)


def keep_milestone(run: Run, steps: int, pending: dict[str, Any]) -> dict[str, Any]:
    """Copy the run's newest checkpoint (it has just reached `steps`) into the milestone's folder and record the
    segment that led to it."""
    checkpoint = RunDir(run.folder).checkpoint_dirs()[-1]
    state = RunDir.read_state(checkpoint)
    folder = run.milestone_folder(steps)
    keep_checkpoint_policy(checkpoint, folder)
    _, decisions = trained_so_far(run.folder)
    trained_s = state.elapsed_s - pending["from_training_s"]
    trained = state.env_steps - pending["from_env_steps"]
    return {"env_steps": state.env_steps, "main_decisions": decisions, "iteration": state.iteration,
            "training_s_total": state.elapsed_s, "policy": str(folder),
            "segment": {"from_env_steps": pending["from_env_steps"], "env_steps": trained, "wall_s": pending["wall_s"],
                        "training_s": trained_s, "env_steps_per_s": trained / max(trained_s, 1e-9)}}


def train(run: Run, steps: int, results: dict[str, Any], args) -> bool:
    """Bring `run` to milestone `steps` and keep its policy there; False when the run has passed it already
    without keeping it."""
    if run.kept(steps):
        return True
    reached, trained_s = run.state()
    pending = run.record.get("pending")
    if reached >= steps:
        if pending and pending["milestone"] == steps:  # the segment ended, and this driver stopped before keeping it
            run.record["milestones"][str(steps)] = keep_milestone(run, steps, pending)
            run.record.pop("pending")
            save_results(run.out, results)
            return True
        print(f"{run.label}: the run is at {reached:,} env steps, past {steps_label(steps)}, and its policy there "
              "was not kept: that milestone is left out", flush=True)
        return False
    if not pending or pending["milestone"] != steps:
        pending = run.record["pending"] = {"milestone": steps, "from_env_steps": reached,
                                           "from_training_s": trained_s, "wall_s": 0.0}
        save_results(run.out, results)
    first_start = [EXPERIMENT, f"variant={run.variant}", f"seed={run.seed}"]
    print(f"{run.label}: training {reached:,} -> {steps:,} env steps ({run.log})", flush=True)
    start = time.perf_counter()
    try:
        train_to_env_steps(run.folder, steps, first_start, run.log, args.overrides)
    finally:  # stopped or done, this start's wall time counts for the segment
        pending["wall_s"] += time.perf_counter() - start
        save_results(run.out, results)
    run.record["milestones"][str(steps)] = kept = keep_milestone(run, steps, pending)
    run.record.pop("pending")
    save_results(run.out, results)
    segment = kept["segment"]
    print(f"{run.label}: {steps_label(steps)} kept at {kept['env_steps']:,} env steps; segment "
          f"{hours(segment['wall_s'])} wall, {segment['env_steps_per_s']:,.0f} env steps/s trained", flush=True)
    return True


def measure(run: Run, steps: int, results: dict[str, Any], rules, args) -> None:
    """The milestone against the panel and in the cross-play against the run's reference milestone, each set of
    games unless it was played before with the same settings."""
    kept = run.kept(steps)
    if not kept:
        return
    panel_settings = {"games": args.games, "seed": args.seed}
    wanted = [bot for bot in STRENGTH_PANEL
              if (kept.get("panel") or {}).get(bot, {}).get("settings") != panel_settings]
    reference = run.kept(args.reference)
    cross_settings = None if reference is None else {"games": args.cross_games, "seed": args.seed,
                                                     "reference": steps_label(args.reference),
                                                     "reference_env_steps": reference["env_steps"]}
    cross_due = cross_settings is not None and (kept.get(CROSS_PLAY) or {}).get("settings") != cross_settings
    if not wanted and not cross_due:
        return

    def progress(what: str) -> None:
        print(f"{run.label} {steps_label(steps)}: {what}", flush=True)

    for bot in wanted:  # one bot at a time, saved as it is played
        wins = measure_strength(run.spec(steps), rules, args.games, args.seed, panel=(bot,), progress=progress)
        kept.setdefault("panel", {})[bot] = {**win_record(wins[bot]), "settings": panel_settings}
        save_results(run.out, results)
    if cross_due:
        wins = measure_strength(run.spec(steps), rules, args.games, args.seed, reference=run.spec(args.reference),
                                cross_games=args.cross_games, panel=(), progress=progress)
        kept[CROSS_PLAY] = {**win_record(wins[CROSS_PLAY]), "settings": cross_settings}
        save_results(run.out, results)


# ---------------------------------------------------------------- report
def steps_text(steps: int) -> str:
    """``8.02M`` or ``4,096``: env steps for a table."""
    return f"{steps / MILLION:.2f}M" if steps >= MILLION else f"{steps:,}"


def hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def segment_time(segment: dict[str, Any]) -> str:
    """A segment's training time (the run's checkpoints keep it), and its wall time unless that is shorter: a driver
    killed outright records no wall time for its start, so a wall time under the training time covers part of it."""
    training = f"{hours(segment['training_s'])} training"
    if segment["wall_s"] >= segment["training_s"]:
        return f"{training}, {hours(segment['wall_s'])} wall"
    return f"{training}, wall not recorded in full (a driver was killed)"


def percent(cell: dict[str, Any] | None) -> str:
    if not cell:
        return "to be measured"
    low, high = cell["ci95"]
    return f"{100 * cell['win_rate']:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def table(results: dict[str, Any]) -> str:
    """The markdown table of every kept milestone, by rule set, env steps and seed."""
    lines = []
    by_variant: dict[str, list[tuple[int, int, dict[str, Any]]]] = {}
    for record in results["runs"].values():
        for steps, kept in record["milestones"].items():
            by_variant.setdefault(record["variant"], []).append((int(steps), record["seed"], kept))
    for variant, rows in by_variant.items():
        lines += [f"\n{variant}: greedy main of the default `+exp=ppo_selfplay` run, 1 against 3\n",
                  "| env steps | seed | " + " | ".join(f"vs 3 {bot}" for bot in STRENGTH_PANEL)
                  + " | cross-play vs its run's reference (parity 25%) | segment | env steps/s trained |",
                  "| --- |" + " --- |" * (len(STRENGTH_PANEL) + 4)]
        for steps, seed, kept in sorted(rows, key=lambda r: (r[0], r[1])):
            cross = kept.get(CROSS_PLAY)
            cross_text = "to be measured"
            if cross:
                reference = cross["settings"]["reference"]
                cross_text = f"{percent(cross)} vs {reference}" + (" (itself)" if reference == steps_label(steps)
                                                                   else "")
            segment = kept["segment"]
            lines.append(f"| {steps_text(kept['env_steps'])} ({steps_label(steps)}) | {seed} | "
                         + " | ".join(percent((kept.get("panel") or {}).get(bot)) for bot in STRENGTH_PANEL)
                         + f" | {cross_text} | {steps_text(segment['env_steps'])} env steps, {segment_time(segment)} "
                         f"| {segment['env_steps_per_s']:,.0f} |")
        totals = {}
        for record in results["runs"].values():
            if record["variant"] == variant and record["milestones"]:
                last = max(record["milestones"].values(), key=lambda k: k["env_steps"])
                segments = [k["segment"] for k in record["milestones"].values()]
                whole = {"training_s": sum(s["training_s"] for s in segments),
                         "wall_s": sum(s["wall_s"] for s in segments)}
                if any(s["wall_s"] < s["training_s"] for s in segments):
                    whole["wall_s"] = 0.0
                totals[record["seed"]] = (last["env_steps"], whole)
        lines.append("\n" + "; ".join(f"seed {seed}: {steps_text(steps)} env steps in {segment_time(whole)}"
                                      for seed, (steps, whole) in sorted(totals.items())))
    return "\n".join(lines).strip() + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    """Win rate against env steps (log scale) per rule set: the three panels and the cross-play, 95% intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = sorted({r["variant"] for r in results["runs"].values() if r["milestones"]})
    columns = [*STRENGTH_PANEL, CROSS_PLAY]
    fig, axes = plt.subplots(len(variants), len(columns), figsize=(4.2 * len(columns), 3.6 * len(variants)),
                             squeeze=False)
    for row, variant in zip(axes, variants):
        runs = sorted((r for r in results["runs"].values() if r["variant"] == variant and r["milestones"]),
                      key=lambda r: r["seed"])
        for ax, column in zip(row, columns):
            for k, record in enumerate(runs):
                points = []
                for kept in record["milestones"].values():
                    cell = kept.get(CROSS_PLAY) if column == CROSS_PLAY else (kept.get("panel") or {}).get(column)
                    if cell:
                        points.append((kept["env_steps"], cell["win_rate"], *cell["ci95"]))
                if not points:
                    continue
                points.sort()
                x, rate, low, high = (list(v) for v in zip(*points))
                x = [v * (1.03 ** k) for v in x]  # a second seed beside the first, not on top of it
                ax.errorbar(x, [100 * r for r in rate], yerr=[[100 * (r - lo) for r, lo in zip(rate, low)],
                                                              [100 * (hi - r) for r, hi in zip(rate, high)]],
                            marker="o" if k == 0 else "s", markersize=4, capsize=3,
                            linestyle="-" if k == 0 else "none", label=f"seed {record['seed']}")
            ax.set_xscale("log")
            milestones = sorted({int(steps) for record in runs for steps in record["milestones"]})
            ax.set_xticks(milestones, [steps_label(m) for m in milestones])
            ax.minorticks_off()
            ax.axhline(25, color="grey", linestyle=":", linewidth=1)
            title = (f"{variant}: 1 vs 3 x its reference main" if column == CROSS_PLAY
                     else f"{variant}: vs 3 x {column}")
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("env steps (log scale)")
            ax.set_ylabel("win rate, % (95% interval)")
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)
    plt.close(fig)


def report(results: dict[str, Any], args) -> None:
    if not any(r["milestones"] for r in results["runs"].values()):
        print("nothing kept yet: no table or plot", flush=True)
        return
    text = table(results)
    write_text(args.table, text)
    print(text, flush=True)
    try:
        plot(results, args.plot)
    except ModuleNotFoundError as err:
        print(f"no plot: {err.name} is not installed (pip install matplotlib)", flush=True)
        return
    print(f"wrote {args.table} and {args.plot}", flush=True)


# ---------------------------------------------------------------- command
def parse(argv: list[str]):
    overrides = [a for a in argv if "=" in a and not a.startswith("-")]
    parser = OneLineParser(description=__doc__.splitlines()[0],
                           epilog="Other arguments key=value are launch/train.py overrides given to every training "
                                  "start (the machine's resources.*); the run's own settings stay the default's.")
    parser.add_argument("--variants", nargs="+", default=["pyludo", "classic"], help="rule sets (conf/variant)")
    parser.add_argument("--milestones", nargs="+", type=env_steps, default=list(DEFAULT_MILESTONES),
                        help="env steps of the milestones (8M, 500k, 8000000 ...)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0], help="training seeds taken to every milestone")
    parser.add_argument("--second-seeds", nargs="*", type=int, default=[1],
                        help="training seeds taken only to --second-seeds-at")
    parser.add_argument("--second-seeds-at", nargs="*", type=env_steps, default=[8 * MILLION, 32 * MILLION],
                        help="the milestones of the second seeds")
    parser.add_argument("--reference", type=env_steps, default=8 * MILLION,
                        help="the milestone every milestone of the same run meets in the cross-play")
    parser.add_argument("--games", type=positive(int), default=5000, help="games against each panel bot")
    parser.add_argument("--cross-games", type=positive(int), default=10000, help="cross-play games")
    parser.add_argument("--seed", type=int, default=1_000_003, help="dice seed of every measurement")
    parser.add_argument("--only", choices=("train", "measure", "report"),
                        help="one step only (default: train, measure and report, milestone by milestone)")
    parser.add_argument("--out", type=Path, default=Path("outputs/scaling"), help="runs, milestones, logs, results")
    parser.add_argument("--plot", type=Path, help="the plot (default <out>/scaling.png)")
    parser.add_argument("--table", type=Path, help="the markdown table (default <out>/scaling.md)")
    args = parser.parse_args([a for a in argv if a not in overrides])
    args.overrides = overrides
    for key in (o.partition("=")[0].lstrip("+~") for o in overrides):
        if key in ("resume", "budget.env_steps", "budget.minutes", "hydra.run.dir", "run_dir", "variant", "seed"):
            raise UserError(f"{key}= is the benchmark's to set: give --variants, --seeds, --milestones or --out")
    args.milestones = sorted(set(args.milestones))
    if args.reference not in args.milestones:
        raise UserError(f"--reference {steps_label(args.reference)} is not one of --milestones "
                        f"({', '.join(map(steps_label, args.milestones))})")
    extra = sorted(set(args.second_seeds_at) - set(args.milestones)) if args.second_seeds else []
    if extra:
        raise UserError(f"--second-seeds-at {steps_label(extra[0])} is not one of --milestones "
                        f"({', '.join(map(steps_label, args.milestones))})")
    if set(args.seeds) & set(args.second_seeds):
        raise UserError(f"seed {sorted(set(args.seeds) & set(args.second_seeds))[0]} is in --seeds and "
                        "--second-seeds: give each seed once")
    if args.seed < 0:
        raise UserError(f"--seed {args.seed} is not allowed: give a dice seed >= 0")
    args.plot = args.plot or args.out / "scaling.png"
    args.table = args.table or args.out / "scaling.md"
    return args


def main(argv: list[str]) -> None:
    args = parse(argv)
    rules = {variant: benchmark_rules(variant, [], players=PLAYERS)[0] for variant in args.variants}
    with only_driver(args.out):
        results = load_results(args.out)
        results["commands"].append(" ".join(["python", "benchmarks/scaling.py", *argv]))
        plan = [(variant, seed, list(args.milestones)) for variant in args.variants for seed in args.seeds]
        plan += [(variant, seed, sorted(set(args.second_seeds_at))) for variant in args.variants
                 for seed in args.second_seeds if args.second_seeds_at]
        runs = [Run(args.out, variant, seed, milestones, results) for variant, seed, milestones in plan]
        save_results(args.out, results)
        try:
            for run in runs:
                if args.reference not in run.milestones and args.only != "report":
                    print(f"{run.label}: no {steps_label(args.reference)} milestone, so no cross-play", flush=True)
                for steps in run.milestones:
                    if args.only in (None, "train"):
                        train(run, steps, results, args)
                    if args.only is None:  # what this milestone makes measurable: itself, and once it is the
                        for earlier in run.milestones:  # reference, the cross-play of those before it
                            if earlier <= steps:
                                measure(run, earlier, results, rules[run.variant], args)
                if args.only == "measure":
                    for steps in run.milestones:
                        measure(run, steps, results, rules[run.variant], args)
        except KeyboardInterrupt:
            save_results(args.out, results)
            print(f"\ninterrupted: what is done is kept in {args.out / RESULTS}; run the same command again to go "
                  "on", file=sys.stderr, flush=True)
            sys.exit(INTERRUPTED)
        if args.only in (None, "report"):
            report(results, args)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except input_errors() as err:
        fail(err)
