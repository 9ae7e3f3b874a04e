"""Time to strength: the wall time from a training command's start until its main first reaches the band.

    python benchmarks/time_to_strength.py                                   # +exp=ppo_selfplay, pyludo, seeds 0 and 1
    python benchmarks/time_to_strength.py --variant classic --exp dqn_selfplay
    python benchmarks/time_to_strength.py --against cb0a298                # the old commit too, and the ratio
    python benchmarks/time_to_strength.py --eval-after budget.env_steps=4000000   # a clean wall time (below)
    python benchmarks/time_to_strength.py --starts warm --seeds 0 resources.env_runners=2   # any train.py override

What is measured
  Each attempt starts a fresh run, ``launch/train.py +exp=<--exp> variant=<--variant> seed=<s>
  checkpoint.every=<--every>`` with any ``key=value`` given here, in a process of its own with its own run folder,
  and keeps a copy of each checkpoint's policy as it appears (``benchmarks/scaling.py``'s `keep_checkpoint_policy`).
  Each copy is played by the attempt's evaluator, a process of the same tree's code started beside the training
  (`EVALUATOR`: ``policies.tournament.first_entry_wins``, as ``benchmarks/scaling.py`` and ``benchmarks/levers.py``
  measure), greedy, against 3 random and then 3 hybrid (``--games`` each, 2,000, dice of ``--seed``, the same games
  for every checkpoint; a checkpoint below the band against random is not played against hybrid). The **band** is a
  table of this script (`BANDS`): pyludo >= 84% against 3 random and >= 50% against 3 hybrid, classic >= 84% and
  >= 45%; a variant without a band is refused.
  The time to strength is the wall time from the command's start until the first checkpoint in the band was
  complete on disk (its ``run_state.json``'s time). Once one is in the band the training is stopped; skipped
  checkpoints before it are then played in order, so the first one in the band is found whatever the evaluator's
  pace.

  Starts: ``cold`` runs the command on an empty numba cache (``LUDO_NUMBA_CACHE``, `ludo_env.engine.jit`), so it
  compiles every kernel; ``warm`` on the cache the machine uses (``LUDO_NUMBA_CACHE`` or its default; ``--warm-cache``
  names another), filled. Where that cache holds nothing for the tree's code yet, the first cold attempt runs in
  it and fills it (a cold start all the same); with ``--starts warm`` alone such a cold attempt is added and
  reported. The evaluations always use the warm cache: they are the instrument, not the command.
  Every attempt of ``--seeds`` (0 and 1) and ``--starts`` is run; the medians over the seeds are printed per start.
  A median needs every seed in the band; an attempt the run ended without reaching it is "not reached".

  ``--against REF`` also runs the commit REF, from a ``git worktree`` in a temporary folder (removed at the end),
  with the same protocol in the same invocation, the two trees' attempts interleaved, and prints each start's
  ratio of medians (this tree's over REF's: below 1 this tree is faster). Each tree's checkpoints are played by
  its own code (a network whose code changed is loaded by its own code).

Off the training path
  The evaluations run while the training goes on, in a process of their own at the lowest priority (nice 19,
  ``--eval-nice``), one at a time on one thread. On a 2-core machine they still take CPU from the training (Ray's
  EnvRunners run at nice 15), so the wall time measured this way can be longer than the command's alone. On a
  machine other people load, nice 19 can leave them waiting for minutes.
  ``--eval-after`` plays nothing while the training runs: the run goes to its own budget (the experiment's, or
  ``budget.env_steps=`` / ``budget.minutes=`` given here), then its kept checkpoints are played in order and the
  timeline is replayed from their times: a clean wall time, for the price of training to the end of the budget.

Faults
  A training that dies on its own (a signal, a crash, a non-zero exit) is reported as killed or failed, with its
  log, and never counted in a median; the command then exits with status 1. Ctrl-C or SIGTERM stop the training
  (SIGTERM: it saves and stops) and the evaluation, and exit with status 130. Results go to
  ``<--out>/time_to_strength.json`` (written after every attempt); an ``--out`` that holds one already is refused.
  A bad option is one line and exit status 2, before anything starts.
"""
from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python benchmarks/time_to_strength.py` puts benchmarks/, not the project, on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scaling import keep_checkpoint_policy, only_driver
from launch.cli import INTERRUPTED, OneLineParser, UserError, fail, positive, write_text
from launch.training.runs import RUN_STATE, RunDir
from launch.training.runs import _stopped_with_parent as stopped_with_parent

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Band:
    random: float
    hybrid: float

    def text(self) -> str:
        return f">= {100 * self.random:g}% vs 3 random and >= {100 * self.hybrid:g}% vs 3 hybrid"


BANDS: dict[str, Band] = {
    "pyludo": Band(random=0.84, hybrid=0.50),
    "classic": Band(random=0.84, hybrid=0.45),
}
"""Variant -> the band a main must reach: its win rates against 3 random and 3 hybrid, greedy."""
PANEL = ("random", "hybrid")
"""The band's opponents, in the order a checkpoint meets them."""
STARTS = ("cold", "warm")
RESULTS = "time_to_strength.json"
FORMAT = "ludo-league-time-to-strength/1"
OWN_KEYS = ("variant", "seed", "resume", "run_dir", "hydra.run.dir", "checkpoint.every", "exp")
"""launch/train.py keys the benchmark sets itself."""
POLL_S = 0.25
STOP_WAIT_S = 120.0
"""How long a training stopped with SIGTERM may take to save and stop before it is killed."""


# ---------------------------------------------------------------- trees: this checkout and --against's commit
@dataclass
class Tree:
    label: str
    root: Path
    commit: str
    temporary: bool = False

    def env(self, numba_cache: str | None = None) -> dict[str, str]:
        """This tree's code first on the path (an editable install points at the main checkout)."""
        path = [str(self.root), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
        if numba_cache is not None:
            env["LUDO_NUMBA_CACHE"] = numba_cache
        return env

    def numba_folder(self, base: str) -> Path:
        """The folder this tree's kernels are cached in under `base` (it is named after a digest of the code)."""
        code = "from ludo_env.engine import jit; print(jit.CACHE_DIR or '')"
        done = subprocess.run([sys.executable, "-c", code], cwd=self.root, env=self.env(base), capture_output=True,
                              text=True, timeout=300, check=False)
        folder = done.stdout.strip()
        if done.returncode != 0 or not folder:
            raise UserError(f"{self.label} ({self.commit[:12]}): its numba cache folder cannot be read "
                            "(ludo_env.engine.jit.CACHE_DIR, LUDO_NUMBA_CACHE): a cold start cannot be told from a "
                            "warm one there")
        return Path(folder)


def git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UserError(f"git {' '.join(args)}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    return done.stdout.strip()


def this_tree() -> Tree:
    try:
        commit = git("rev-parse", "HEAD")
        if git("status", "--porcelain", "--untracked-files=no"):
            commit += "+changes"
    except UserError:
        commit = "unknown"
    return Tree("this", ROOT, commit)


def resolve_ref(ref: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise UserError(f"--against {ref}: not a commit of this repository (give a commit, branch or tag)")
    return done.stdout.strip()


def add_worktree(commit: str) -> Tree:
    folder = Path(tempfile.mkdtemp(prefix="time_to_strength_against_"))
    folder.rmdir()  # git makes it
    git("worktree", "add", "--detach", str(folder), commit)
    return Tree("against", folder, commit, temporary=True)


def remove_worktree(tree: Tree) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree.root)], capture_output=True,
                   check=False)
    shutil.rmtree(tree.root, ignore_errors=True)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True, check=False)


def has_numba_files(folder: Path) -> bool:
    return folder.is_dir() and any(folder.rglob("*.nbi"))


# ---------------------------------------------------------------- the evaluator: a process of the tree's own code
EVALUATOR = """
import json, sys
from ludo_env.rules import Rules
from policies.league.evaluation import win_record
from policies.tournament import first_entry_wins

print("ready", flush=True)
for line in sys.stdin:
    job = json.loads(line)
    try:
        rules = Rules.load(job["variant"], players=4)
        answer = win_record(first_entry_wins(job["spec"], job["opponent"], rules, job["games"], job["seed"], 1))
    except Exception as err:
        answer = {"error": f"{type(err).__name__}: {err}"}
    print("result " + json.dumps(answer), flush=True)
"""
"""What the evaluator runs: greedy main against 3 copies of an opponent, one line in and one out per evaluation,
with the tree's own `policies.tournament.first_entry_wins` and `policies.league.evaluation.win_record` (the code
``benchmarks/scaling.py`` and ``benchmarks/levers.py`` measure with). One process per attempt, so its imports and
kernels load once, while the training starts."""


def lower_priority(nice: int):
    """A ``preexec_fn`` for the evaluator: `nice` added to its niceness, and SIGTERM when this process dies."""
    parent_death = stopped_with_parent()

    def start() -> None:
        os.nice(nice)
        if parent_death is not None:
            parent_death()

    return start


class Evaluator:
    """The tree's evaluator process; one evaluation at a time."""

    def __init__(self, tree: Tree, args, log: Path):
        self.args, self.log, self.tree = args, log, tree
        self.lines: queue.Queue = queue.Queue()
        with open(log, "w") as err:
            self.process = subprocess.Popen([sys.executable, "-c", EVALUATOR], cwd=tree.root,
                                            env=tree.env(args.warm_base),
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                            preexec_fn=lower_priority(args.eval_nice))
        threading.Thread(target=self._read, daemon=True).start()
        self.job: tuple[dict[str, Any], str] | None = None

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.startswith("result "):
                self.lines.put(json.loads(line[len("result "):]))
        self.lines.put(None)  # the process ended

    def start(self, entry: dict[str, Any], opponent: str) -> None:
        job = {"spec": f"ckpt:{entry['copy']}", "opponent": opponent, "games": self.args.games,
               "seed": self.args.seed, "variant": self.args.variant}
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        self.job = (entry, opponent)

    def result(self, wait: bool) -> dict[str, Any] | None:
        """The running evaluation's win record once its games are played; None while they are not."""
        try:
            answer = self.lines.get(block=wait)
        except queue.Empty:
            return None
        entry, opponent = self.job
        if answer is None or "error" in answer:
            what = answer["error"] if answer else f"the evaluator stopped (status {self.process.wait()})"
            raise UserError(f"{self.tree.label}: the evaluation of {entry['checkpoint']} against 3 {opponent} "
                            f"failed: {what} ({self.log})")
        self.job = None
        return answer

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


# ---------------------------------------------------------------- one attempt: a fresh run, watched
@dataclass
class Attempt:
    tree: Tree
    start: str
    seed: int
    folder: Path
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.tree.label} {self.start} s{self.seed}"

    @property
    def run(self) -> Path:
        return self.folder / "run"

    @property
    def kept(self) -> Path:
        return self.folder / "checkpoints"

    @property
    def log(self) -> Path:
        return self.folder / "train.log"


class Watch:
    """The attempt's training process, its checkpoints as they appear, and the evaluations of their copies."""

    def __init__(self, attempt: Attempt, args, band: Band, numba_cache: str):
        self.attempt, self.args, self.band = attempt, args, band
        self.checkpoints: list[dict[str, Any]] = []
        self.seen: set[str] = set()
        self.stopped_by_us = False
        attempt.folder.mkdir(parents=True, exist_ok=True)
        tree = attempt.tree
        self.command = [f"+exp={args.exp}", f"variant={args.variant}", f"seed={attempt.seed}",
                        f"checkpoint.every={args.every}", f"hydra.run.dir={attempt.run}", *args.overrides]
        self.started = time.time()
        with open(attempt.log, "w") as log:
            log.write(f"$ LUDO_NUMBA_CACHE={numba_cache} python launch/train.py {' '.join(self.command)}\n")
            log.flush()
            self.process = subprocess.Popen([sys.executable, str(tree.root / "launch" / "train.py"), *self.command],
                                            cwd=tree.root, env=tree.env(numba_cache), stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True, preexec_fn=stopped_with_parent())
        # after the training's fork: the evaluator's reader thread is not to be in a forked child
        self.evaluator = Evaluator(tree, args, attempt.folder / "evaluator.log")

    # -------------------------------------------- checkpoints
    def collect(self) -> None:
        """Copy every checkpoint that appeared since the last look (the run prunes old ones)."""
        for checkpoint in RunDir(self.attempt.run).checkpoint_dirs():
            if checkpoint.name in self.seen:
                continue
            self.seen.add(checkpoint.name)
            copy = self.attempt.kept / checkpoint.name
            try:
                at = (checkpoint / RUN_STATE).stat().st_mtime - self.started
                keep_checkpoint_policy(checkpoint, copy)
                state = RunDir.read_state(copy)
            except (OSError, ValueError, KeyError, TypeError) as err:  # pruned while it was copied
                print(f"{self.attempt.name}: {checkpoint.name} could not be kept ({err})", flush=True)
                continue
            self.checkpoints.append({"checkpoint": checkpoint.name, "iteration": state.iteration,
                                     "env_steps": state.env_steps, "wall_s": at, "copy": str(copy)})

    # -------------------------------------------- evaluations
    def _verdict(self, entry: dict[str, Any]) -> tuple[str | None, bool | None]:
        """(the opponent `entry` meets next, None when its verdict is known; True in the band, False below it,
        None while not known), from the panel's cells in order: the first cell below the band settles it."""
        for opponent in PANEL:
            cell = entry.get(opponent)
            if cell is None:
                return opponent, None
            if cell["win_rate"] < getattr(self.band, opponent):
                return None, False
        return None, True

    def next_opponent(self, entry: dict[str, Any]) -> str | None:
        """The opponent `entry` meets next, or None when its verdict is known."""
        return self._verdict(entry)[0]

    def in_band(self, entry: dict[str, Any]) -> bool | None:
        """True in the band, False below it, None while not known."""
        return self._verdict(entry)[1]

    @property
    def evaluating(self) -> bool:
        return self.evaluator.job is not None

    def start_evaluation(self, entry: dict[str, Any]) -> None:
        self.evaluator.start(entry, self.next_opponent(entry))

    def finish_evaluation(self, wait: bool) -> bool:
        """Take the running evaluation's result if it is there (or wait for it); True once it was taken."""
        entry, opponent = self.evaluator.job
        cell = self.evaluator.result(wait)
        if cell is None:
            return False
        entry[opponent] = cell
        self.say_cell(entry, opponent, cell)
        return True

    def say_cell(self, entry: dict[str, Any], opponent: str, cell: dict[str, Any]) -> None:
        low, high = cell["ci95"]
        print(f"{self.attempt.name}: {entry['checkpoint']} ({entry['env_steps']:,} env steps, at "
              f"{entry['wall_s']:.0f} s): {100 * cell['win_rate']:.1f}% [{100 * low:.1f}, {100 * high:.1f}] vs 3 "
              f"{opponent} (band {100 * getattr(self.band, opponent):g}%)", flush=True)

    def first_in_band(self) -> dict[str, Any] | None:
        """The earliest checkpoint known to be in the band with every checkpoint before it known to be below it."""
        for entry in self.checkpoints:
            verdict = self.in_band(entry)
            if verdict is None:
                return None
            if verdict:
                return entry
        return None

    def settle(self, upto: dict[str, Any] | None) -> dict[str, Any] | None:
        """Play every checkpoint before `upto` (all of them when None) whose verdict is unknown, oldest first, until
        one is in the band; that one, or None."""
        for entry in self.checkpoints:
            if entry is upto:
                return upto
            while self.in_band(entry) is None:
                self.start_evaluation(entry)
                self.finish_evaluation(wait=True)
            if self.in_band(entry):
                return entry
        return upto

    # -------------------------------------------- the training process
    def stop_training(self) -> None:
        """SIGTERM (it saves a checkpoint and stops), then SIGKILL if it takes too long."""
        if self.process.poll() is not None:
            return
        self.stopped_by_us = True
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop_all(self) -> None:
        self.evaluator.stop()
        self.stop_training()


def run_attempt(attempt: Attempt, args, band: Band, numba_cache: str) -> dict[str, Any]:
    """One attempt (module docstring): its record."""
    watch = Watch(attempt, args, band, numba_cache)
    print(f"{attempt.name}: training pid {watch.process.pid}, log {attempt.log}", flush=True)
    record = attempt.record
    record.update({"tree": attempt.tree.label, "commit": attempt.tree.commit, "start": attempt.start,
                   "seed": attempt.seed, "numba_cache": numba_cache, "log": str(attempt.log),
                   "command": "python launch/train.py " + " ".join(watch.command), "checkpoints": watch.checkpoints})
    found = None
    try:
        while True:
            status = watch.process.poll()
            watch.collect()
            if not args.eval_after:
                if watch.evaluating:
                    watch.finish_evaluation(wait=False)
                found = next((e for e in watch.checkpoints if watch.in_band(e)), None)
                if found is not None:
                    break
                if not watch.evaluating:
                    pending = [e for e in watch.checkpoints if watch.in_band(e) is None]
                    if pending:  # the newest: the evaluator keeps pace; those skipped are played if needed
                        watch.start_evaluation(pending[-1])
            if status is not None:
                break
            time.sleep(POLL_S)
        if found is not None:
            watch.stop_training()
        status = watch.process.wait()
        watch.collect()
        if watch.stopped_by_us:
            record["stopped"] = "by the benchmark, once a checkpoint was in the band"
        elif status != 0:
            record["status"] = (f"killed (signal {-status})" if status < 0 else f"failed (exit status {status})")
            return record
        if watch.evaluating:
            watch.finish_evaluation(wait=True)
        first = watch.settle(found)
    except KeyboardInterrupt:
        record["status"] = "interrupted"
        raise
    finally:
        watch.stop_all()
    if first is None:
        last = watch.checkpoints[-1] if watch.checkpoints else None
        record["status"] = "not reached"
        record["last_env_steps"] = last["env_steps"] if last else 0
        record["last_wall_s"] = last["wall_s"] if last else None
    else:
        record.update({"status": "reached", "wall_s": first["wall_s"], "env_steps": first["env_steps"],
                       "checkpoint": first["checkpoint"]})
    return record


# ---------------------------------------------------------------- the report
def status_text(record: dict[str, Any]) -> str:
    status = record.get("status", "not run")
    if status == "reached":
        return f"reached at {record['wall_s']:.0f} s ({record['env_steps']:,} env steps, {record['checkpoint']})"
    if status == "not reached":
        seen = f", last checkpoint at {record['last_env_steps']:,} env steps" if record.get("last_env_steps") else ""
        return f"not reached{seen}"
    return f"{status} (not counted; log {record['log']})" if "log" in record else status


def medians(attempts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per tree and start: the median wall time over the seeds, when every seed reached the band."""
    out: dict[str, dict[str, Any]] = {}
    for record in attempts:
        key = f"{record['tree']} {record['start']}"
        cell = out.setdefault(key, {"tree": record["tree"], "start": record["start"], "wall_s": [], "seeds": 0,
                                    "reached": 0, "not_counted": 0})
        cell["seeds"] += 1
        if record.get("status") == "reached":
            cell["reached"] += 1
            cell["wall_s"].append(record["wall_s"])
        elif record.get("status") != "not reached":
            cell["not_counted"] += 1
    for cell in out.values():
        every = cell["reached"] == cell["seeds"]
        cell["median_s"] = statistics.median(cell["wall_s"]) if every and cell["wall_s"] else None
    return out


def ratios(cells: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    """Per start: this tree's median over --against's (below 1: this tree is faster)."""
    out = {}
    for start in STARTS:
        ours, theirs = cells.get(f"this {start}"), cells.get(f"against {start}")
        if ours is None or theirs is None:
            continue
        out[start] = (ours["median_s"] / theirs["median_s"] if ours["median_s"] and theirs["median_s"] else None)
    return out


def report(results: dict[str, Any]) -> str:
    lines = [f"\ntime to strength: +exp={results['exp']} variant={results['variant']}, band {results['band_text']}"
             f"{' (a test band: not a time to strength)' if results['test_band'] else ''}; {results['games']:,} "
             f"games per opponent, dice seed {results['seed']}; "
             + ("evaluated after each run (clean wall time)" if results["eval_after"]
                else "evaluated beside the training (it takes CPU from it)"),
             "| tree | commit | start | seed | result |", "| --- | --- | --- | --- | --- |"]
    for record in results["attempts"]:
        lines.append(f"| {record['tree']} | {record['commit'][:12]} | {record['start']} | {record['seed']} | "
                     f"{status_text(record)} |")
    lines += ["", "| tree | start | median wall time to the band | seeds reached |", "| --- | --- | --- | --- |"]
    for cell in results["medians"].values():
        median = f"{cell['median_s']:.0f} s" if cell["median_s"] is not None else "none: not every seed reached it"
        counted = f", {cell['not_counted']} not counted (killed or failed)" if cell["not_counted"] else ""
        lines.append(f"| {cell['tree']} | {cell['start']} | {median} | {cell['reached']} of {cell['seeds']}"
                     f"{counted} |")
    for start, ratio in results.get("ratios", {}).items():
        lines.append(f"\n{start} start: this tree's median over {results['against'][:12]}'s: "
                     + (f"{ratio:.2f} (below 1: this tree is faster)" if ratio is not None
                        else "no ratio (a side has no median)"))
    return "\n".join(lines)


# ---------------------------------------------------------------- command
def band_share(text: str) -> float:
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not allowed: give a win rate in [0, 1]")
    return value


def niceness(text: str) -> int:
    import argparse

    if not text.isdigit() or int(text) > 19:
        raise argparse.ArgumentTypeError(f"{text} is not allowed: give a niceness from 0 to 19")
    return int(text)


def parse(argv: list[str]):
    overrides = [a for a in argv if "=" in a and not a.startswith("-")]
    parser = OneLineParser(description=__doc__.splitlines()[0],
                           epilog="Other arguments key=value are launch/train.py overrides given to every attempt "
                                  "(the machine's resources.*, a budget).")
    parser.add_argument("--exp", default="ppo_selfplay", help="the experiment (conf/exp) of every attempt")
    parser.add_argument("--variant", default="pyludo", help=f"rule set; one with a band: {', '.join(BANDS)}")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1], help="training seeds, one attempt each")
    parser.add_argument("--starts", nargs="+", choices=STARTS, default=list(STARTS),
                        help="cold: an empty numba cache; warm: a filled one")
    parser.add_argument("--every", type=positive(int), default=10,
                        help="iterations between checkpoints (checkpoint.every): the points evaluated")
    parser.add_argument("--games", type=positive(int), default=2000, help="games against each opponent")
    parser.add_argument("--seed", type=int, default=1_000_003, help="dice seed of every evaluation")
    parser.add_argument("--against", metavar="REF", help="also run this commit (git ref) and print the ratio")
    parser.add_argument("--eval-after", action="store_true",
                        help="evaluate the kept checkpoints after each run ends (a clean wall time)")
    parser.add_argument("--eval-nice", type=niceness, default=19, metavar="0-19",
                        help="niceness added to the evaluations (19: the lowest priority, off the training's way)")
    parser.add_argument("--warm-cache", metavar="DIR",
                        help="the numba cache of warm starts (default: LUDO_NUMBA_CACHE or its default)")
    parser.add_argument("--out", type=Path, help="runs, copies, logs and results "
                                                 "(default: outputs/time_to_strength/<UTC time>)")
    parser.add_argument("--test-band", nargs=2, type=band_share, metavar=("RANDOM", "HYBRID"),
                        help="for tests only: this band instead of the variant's (what it prints is no time to "
                             "strength)")
    args = parser.parse_args([a for a in argv if a not in overrides])
    args.overrides = overrides
    for override in overrides:
        key = override.partition("=")[0].lstrip("+~")
        if key in OWN_KEYS:
            raise UserError(f"{key}= is the benchmark's to set: give --exp, --variant, --seeds, --every or --out")
    if args.variant not in BANDS:
        raise UserError(f"--variant {args.variant}: no band is set for it (there are: {', '.join(BANDS)})")
    if not (ROOT / "conf" / "exp" / f"{args.exp}.yaml").is_file():
        known = sorted(p.stem for p in (ROOT / "conf" / "exp").glob("*.yaml"))
        raise UserError(f"--exp {args.exp}: no such experiment (there are: {', '.join(known)})")
    if len(set(args.seeds)) != len(args.seeds):
        raise UserError("--seeds names a seed twice: give each seed once")
    if args.seed < 0:
        raise UserError(f"--seed {args.seed} is not allowed: give a dice seed >= 0")
    args.starts = [s for s in STARTS if s in args.starts]
    args.band = Band(*args.test_band) if args.test_band else BANDS[args.variant]
    if args.against is not None:
        args.against_commit = resolve_ref(args.against)
    if args.out is None:
        args.out = Path("outputs/time_to_strength") / time.strftime("%Y-%m-%d_%H-%M-%S", time.gmtime())
    args.out = args.out.absolute()  # the trainings and evaluations run in their tree's folder
    if (args.out / RESULTS).exists():
        raise UserError(f"{args.out} holds the results of an earlier invocation: give another --out")
    return args


def plan(trees: list[Tree], args) -> list[tuple[Tree, str, int]]:
    """(tree, start, seed) of every attempt, the trees interleaved (their order flips each time) so that a change
    in the machine's load falls on both alike."""
    order = []
    for k, (seed, start) in enumerate((seed, start) for seed in args.seeds for start in args.starts):
        for tree in (trees if k % 2 == 0 else trees[::-1]):
            order.append((tree, start, seed))
    return order


def main(argv: list[str]) -> None:
    args = parse(argv)
    trees = [this_tree()]
    warm_base = args.warm_cache or os.environ.get("LUDO_NUMBA_CACHE") or str(Path.home() / ".cache" / "ludo-league"
                                                                               / "numba")
    if warm_base.lower() == "off":
        raise UserError("LUDO_NUMBA_CACHE=off: a warm start needs a numba cache (give --warm-cache DIR)")
    args.warm_base = warm_base
    with only_driver(args.out):
        results: dict[str, Any] = {
            "format": FORMAT, "command": " ".join(["python", "benchmarks/time_to_strength.py", *argv]),
            "exp": args.exp, "variant": args.variant, "band": vars(args.band), "band_text": args.band.text(),
            "test_band": bool(args.test_band), "games": args.games, "seed": args.seed, "every": args.every,
            "eval_after": args.eval_after, "overrides": args.overrides, "against": getattr(args, "against_commit", None),
            "cpus": os.cpu_count(), "attempts": []}
        interrupted = False
        try:
            if args.against is not None:
                trees.append(add_worktree(args.against_commit))
            warm = {tree.label: tree.numba_folder(warm_base) for tree in trees}
            filled = {label: has_numba_files(folder) for label, folder in warm.items()}
            attempts = plan(trees, args)
            if "cold" not in args.starts:  # a warm cache that holds nothing for a tree is filled by a cold attempt
                attempts = [(tree, "cold", args.seeds[0]) for tree in trees if not filled[tree.label]] + attempts
            for tree, start, seed in attempts:
                attempt = Attempt(tree, start, seed, args.out / tree.label / f"{start}_s{seed}")
                if attempt.folder.exists():  # the cold attempt that filled a cache, asked for again
                    attempt = Attempt(tree, start, seed, args.out / tree.label / f"{start}_s{seed}_again")
                if start == "warm":
                    cache = warm_base
                elif not filled[tree.label]:
                    cache = warm_base  # empty for this tree's code: a cold start, and the warm ones' cache after it
                    filled[tree.label] = True
                    print(f"{attempt.name}: the warm cache holds nothing for this code yet: this cold attempt "
                          "fills it", flush=True)
                else:
                    cache = str(args.out / "numba-cold" / f"{tree.label}_{start}_s{seed}")
                results["attempts"].append(attempt.record)
                try:
                    run_attempt(attempt, args, args.band, cache)
                finally:
                    if cache != warm_base:
                        shutil.rmtree(cache, ignore_errors=True)
                    results["medians"] = medians(results["attempts"])
                    write_text(args.out / RESULTS, json.dumps(results, indent=1) + "\n")
                print(f"{attempt.name}: {status_text(attempt.record)}", flush=True)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            for tree in trees:
                if tree.temporary:
                    remove_worktree(tree)
        results["medians"] = medians(results["attempts"])
        if args.against is not None:
            results["ratios"] = ratios(results["medians"])
        write_text(args.out / RESULTS, json.dumps(results, indent=1) + "\n")
    print(report(results), flush=True)
    print(f"\nresults: {args.out / RESULTS}", flush=True)
    if interrupted:
        print("\ninterrupted: the attempt under way is not counted", file=sys.stderr, flush=True)
        sys.exit(INTERRUPTED)
    if any(r.get("status") not in ("reached", "not reached") for r in results["attempts"]):
        sys.exit(1)


def on_sigterm(signum, frame):
    raise KeyboardInterrupt


def cli(argv: list[str]) -> None:
    """The command: `main`, a refusal as one line and exit status 2 (the tests call it in-process too)."""
    try:
        main(argv)
    except UserError as err:
        fail(err)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, on_sigterm)
    cli(sys.argv[1:])
