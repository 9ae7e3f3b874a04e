"""Which levers move strength: a candidate main against a reference main at equal env steps, in the cross-play and
against the panels, with intervals, and whether the lever joins the default (the strength study among the docs' results pages).

    python benchmarks/levers.py --list                                                  # the levers, what each is
    python benchmarks/levers.py --lever width2x --train              # against the shipped default 8M main of pyludo
    python benchmarks/levers.py --reference outputs/scaling/milestones/pyludo_s0/8M --lever width2x --train
    python benchmarks/levers.py --reference <8M policy> --lever expectimax_policy_d1   # a search lever: no training
    python benchmarks/levers.py --reference <8M policy> --candidate <run> --label my_change
    python benchmarks/levers.py --table                                                # every row measured so far

The reference is today's default main (``ckpt:`` of a run, checkpoint or policy folder: the scaling run's
milestone at the candidate's env steps, ``benchmarks/scaling.py``). Without ``--reference`` it is the shipped default
8M main of the rule set (`SHIPPED_REFERENCES`: ``benchmarks/scaling.py``'s 8M milestone of seed 0, with the run
state that records its env steps), so a row at 8M, and the champions' cross-play, can be measured again on a fresh
checkout. The candidate is one of:

  a training lever   ``--lever NAME --train``: ``launch/train.py +exp=ppo_selfplay variant=<v> seed=<s>`` with the
                     lever's overrides, trained to the reference's env steps (``budget.minutes=0``) in
                     ``<out>/runs/<lever>_<variant>_s<seed>`` (resumable: a rerun resumes or skips it); a lever
                     whose overrides change at a share of the steps trains in segments, each a resume of the same
                     run (the batch size lever). The row plays the policy kept at those env steps,
                     ``<out>/milestones/<lever>_<variant>_s<seed>/<steps>``, so a row at 8M still names the 8M
                     policy after the run is resumed to 32M for another row. Without ``--train``, ``--candidate``
                     names the run trained with them.
  a search lever     ``--lever NAME``: a look-ahead player over the reference main's own policy and critic
                     (``search:<reference>?...``, ``mcts:<reference>?...``), so at the same env steps by construction.
  any player spec    ``--candidate SPEC --label NAME``.

What is measured (`policies.league.evaluation.measure_strength`, the same code as ``benchmarks/scaling.py``):
  cross-play  the candidate against 3 copies of the reference (``--cross-games``, 10,000, seats rotated; parity
              25%), with its 95% Wilson interval;
  panels      the candidate and the reference each against 3 random, 3 hybrid and 3 heuristic000 (``--games``
              each, 5,000) on the same dice: both win rates and their difference with a paired 95% interval
              (`policies.tournament.paired_difference`, as ``benchmarks/paired.py``);
  cost        the seconds the candidate's cross-play took per game (a search's cost per move is
              ``benchmarks/search_speed.py``'s). A search plays every one of its decisions at that cost, so its
              row takes about (3 x ``--games`` + ``--cross-games``) x its decisions per game x its time per move:
              time a search with ``search_speed.py`` before choosing the number of games.

The rule for the default: a lever joins it when its main beats the reference in the cross-play by more than the
interval (its lower bound above parity) and is no worse against any of the three panels (no paired interval wholly
below 0). The verdict is printed with the row.

Both mains must have trained the same env steps: when both record them (a run, a checkpoint, a scaling milestone;
`launch.training.runs.trained_env_steps`), a difference above ``--tolerance`` (1%) is refused in one line. Results
are kept by label in ``<out>/levers.json`` (atomically); a rerun with the same settings prints the kept row without
playing again.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python benchmarks/levers.py` puts benchmarks/, not the project, on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.scaling import (
    EXPERIMENT,
    PLAYERS,
    env_steps,
    keep_checkpoint_policy,
    only_driver,
    read_results,
    steps_label,
    steps_text,
)
from launch.cli import OneLineParser, UserError, benchmark_rules, fail, input_errors, positive, write_text
from launch.training.runs import RunDir, train_to_env_steps, trained_env_steps
from policies.champions import CHAMPION_PREFIX, SHIPPED_POLICIES, champion_folder
from policies.checkpoints import PolicyFileError
from policies.league.evaluation import CROSS_PLAY, STRENGTH_PANEL, measure_strength, win_record
from policies.tournament import paired_difference

SHIPPED_REFERENCES: dict[str, str] = {
    "classic": "default_classic_8M",
    "pyludo": "default_pyludo_8M",
}
"""Rule set -> today's default main at 8M env steps, a scaling milestone's folder under `SHIPPED_POLICIES`: the
reference when ``--reference`` is not given."""

RESULTS = "levers.json"
FORMAT = "ludo-league-levers/1"
PARITY = 1 / PLAYERS


@dataclass(frozen=True)
class Lever:
    """One lever: how its candidate main is made, and what it is."""

    what: str
    overrides: tuple[str, ...] = ()
    """``launch/train.py`` overrides of a training lever, on top of ``+exp=ppo_selfplay``."""
    later: tuple[tuple[float, tuple[str, ...]], ...] = ()
    """(share of the env steps, overrides) of a training lever that changes on the way: each a resume from there."""
    search: str | None = None
    """A search lever's spec, ``{reference}`` standing for the reference main's policy folder."""


LEVERS: dict[str, Lever] = {
    # network width and depth (conf/network)
    "width2x": Lever("token_set with every layer twice as wide", ("network=token_set_2x",)),
    "width4x": Lever("token_set with every layer four times as wide", ("network=token_set_4x",)),
    "depth2x": Lever("token_set with twice the layers", ("network=token_set_deep",)),
    # schedules over a long run (RLlib's own, over env steps)
    "lr_decay": Lever("learning rate 1e-3 decayed linearly to 1e-4 at the last env step", ("algo.lr_end=1e-4",)),
    "entropy_decay": Lever("entropy bonus 0.01 decayed linearly to 0.001 at the last env step",
                           ("algo.entropy_coeff_end=0.001",)),
    "batch_growth": Lever("train batch 16,384 for the first half of the env steps, 65,536 for the second (a resume "
                          "with the larger batch: RLlib takes a new batch size only at a restart)",
                          later=((0.5, ("algo.train_batch_size=65536",)),)),
    # how much is learned from each sample: the default's one pass was chosen for wall time in five-minute runs,
    # not for strength at equal env steps (docs/pages/results/2026-11-23-ppo-batch-settings.md)
    "sample_reuse": Lever("each batch of 16,384 env steps learned in 4 passes of 2,048-row minibatches: 32 updates "
                          "an iteration, 8 times the default's", ("algo.num_epochs=4", "algo.minibatch_size=2048")),
    # the return main learns (conf/reward, the discount): a game is about 56 of main's decisions
    "discount_0997": Lever("discount 0.997 instead of 0.99, the shaping's with it (a win 56 decisions away is worth "
                           "0.85 of one now, not 0.57)", ("algo.gamma=0.997", "reward.gamma=0.997")),
    "gae_lambda_1": Lever("advantages from the whole discounted return (GAE lambda 1.0 instead of 0.95): no "
                          "leaning on main's critic beyond its baseline", ("algo.gae_lambda=1.0",)),
    "sparse_reward": Lever("end pay alone, without the progress-lead shaping", ("reward=sparse",)),
    # whom main trains against (conf/league): the panel's bots at more of the seats
    "panel_bots": Lever("the three panel bots (random, hybrid, heuristic000) at the training seats, on 38% of the "
                        "opponent seats instead of random and hybrid on 20%",
                        ("league.bots=[random,hybrid,heuristic000]", "league.bot_weight=0.5")),
    # what main sees (conf/obs)
    "egocentric_obs": Lever("the board in the mover's frame (176 floats) instead of each move's afterstate",
                            ("obs=egocentric",)),
    "afterstates_board_obs": Lever("each move's afterstate and the board in the mover's frame side by side (626 "
                                   "floats: every opponent token its own block)", ("obs=afterstates_board",)),
    # how the network relates the tokens (conf/network): mean pooling gives every own token one summary of the
    # opponent tokens; attention lets each own token weigh each opponent token, and captures and threats are pairs
    "board_attention": Lever("afterstates_board_obs with attention pooling: each own token attends over the "
                             "opponent tokens instead of sharing their mean",
                             ("obs=afterstates_board", "network.pooling=attention")),
    # search at play time over main's own policy and critic (policies/search.py, policies/mcts.py)
    "expectimax_policy_d1": Lever("expectimax looking at one reply, the other seats moving by main's policy "
                                  "probabilities (the expectation under the policy), main's critic at the leaves",
                                  search="search:{reference}?depth=2&opponent=policy"),
    "expectimax_policy_d2": Lever("the same, looking at two replies",
                                  search="search:{reference}?depth=3&opponent=policy"),
    "mcts16": Lever("MCTS with chance nodes, main's policy as prior and its critic at the leaves, 16 simulations",
                    search="mcts:{reference}?sims=16"),
    "mcts64": Lever("the same, 64 simulations", search="mcts:{reference}?sims=64"),
    "mcts256": Lever("the same, 256 simulations", search="mcts:{reference}?sims=256"),
}
"""Every lever of the issue's table; ``--lever NAME`` measures one. A lever of your own: ``--candidate``."""


@dataclass
class Candidate:
    label: str
    spec: str
    lever: str | None = None
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- specs, folders, env steps
def policy_path(spec: str) -> Path | None:
    """The policy, checkpoint or run folder a learned spec plays (a search's value source), or None for a bot."""
    if spec.startswith(CHAMPION_PREFIX):
        return champion_folder(spec)
    for prefix in ("ckpt:", "search:", "mcts:"):
        if spec.startswith(prefix):
            return Path(spec[len(prefix):].partition("?")[0])
    return None


def as_spec(text: str) -> str:
    """A player spec: a bare folder gets ``ckpt:``."""
    return text if ":" in text.split("/")[0] else f"ckpt:{text}"


def shipped_reference(variant: str) -> Path:
    """The shipped default 8M main of `variant`; a `UserError` of one line when there is none in this install."""
    if variant not in SHIPPED_REFERENCES:
        raise UserError(f"no default main is shipped for --variant {variant} (there are: "
                        f"{', '.join(SHIPPED_REFERENCES)}): give --reference, today's default main at the "
                        "candidate's env steps (a run, checkpoint or policy folder, e.g. a scaling milestone)")
    folder = SHIPPED_POLICIES / SHIPPED_REFERENCES[variant]
    if not folder.is_dir():
        raise UserError(f"the default main of {variant} should be at '{folder}', which this checkout does not have: "
                        "give --reference")
    return folder


def steps_of(spec: str) -> int | None:
    """The env steps of the main a spec plays or searches over, when its folder records them."""
    path = policy_path(spec)
    if path is None or spec.startswith(CHAMPION_PREFIX):
        return None
    try:
        return trained_env_steps(path)
    except PolicyFileError:  # no policy there (yet): the player says so when it loads
        return None


def check_equal_steps(reference: int | None, candidate: int | None, tolerance: float) -> str | None:
    """A one-line refusal when both mains record their env steps and they differ by more than `tolerance`; else
    None."""
    if reference is None or candidate is None:
        return None
    if abs(candidate - reference) > tolerance * reference:
        return (f"the candidate trained {candidate:,} env steps and the reference {reference:,}: levers are "
                f"compared at equal env steps (within --tolerance {tolerance:g}); give a reference of the "
                "candidate's env steps (a scaling milestone)")
    return None


# ---------------------------------------------------------------- training a lever's main
def lever_name(name: str, variant: str, seed: int) -> str:
    """A training lever's main: one per lever, rule set and training seed, so that a rerun resumes its own run
    and never another rule set's."""
    return f"{name}_{variant}_s{seed}"


def lever_run(out: Path, name: str, variant: str, seed: int) -> Path:
    """The run folder of a training lever's main."""
    return out / "runs" / lever_name(name, variant, seed)


def lever_milestone(out: Path, name: str, variant: str, seed: int, steps: int) -> Path:
    """Where a lever's main at `steps` env steps is kept (its checkpoint's policy/ and run state), beside the runs:
    the policy its row names, whatever the run trains later."""
    return out / "milestones" / lever_name(name, variant, seed) / steps_label(steps)


def checkpoint_at(run: Path, steps: int, tolerance: float) -> Path:
    """The checkpoint of a run found at or past `steps` env steps that is within `tolerance` of them (as rows
    compare mains): the first one at or past them."""
    past = [(reached, checkpoint) for checkpoint in RunDir(run).checkpoint_dirs()
            if (reached := trained_env_steps(checkpoint)) is not None and reached >= steps]
    if past and past[0][0] - steps <= tolerance * steps:
        return past[0][1]
    where = f"the first one past them is at {past[0][0]:,}" if past else "none is at or past them"
    raise UserError(f"{run} has no checkpoint within --tolerance {tolerance:g} of {steps:,} env steps ({where}), and "
                    "its policy there was not kept: train the lever to these env steps in another --out")


def train_lever(name: str, lever: Lever, steps: int, args) -> Path:
    """Train (or resume) the lever's main to `steps` env steps and keep its policy there; the kept folder. A kept
    one is returned as it is, so a row stays reproducible after its run is resumed to more env steps."""
    run = lever_run(args.out, name, args.variant, args.train_seed)
    kept = lever_milestone(args.out, name, args.variant, args.train_seed, steps)
    if kept.is_dir():
        return kept
    first_start = [EXPERIMENT, f"variant={args.variant}", f"seed={args.train_seed}", *lever.overrides]
    segments = [(0.0, ())] + sorted(lever.later)
    log = args.out / "logs" / f"{run.name}.log"
    trained = False
    for k in range(len(segments)):
        end = steps if k + 1 == len(segments) else int(segments[k + 1][0] * steps)
        reached = steps_of(f"ckpt:{run}") if run.is_dir() else None
        if reached is not None and reached >= end:
            continue
        print(f"{name}: training to {end:,} env steps ({log})", flush=True)
        changed = [o for _, later in segments[1:k + 1] for o in later]  # every change made so far stays
        train_to_env_steps(run, end, first_start, log, [*changed, *args.overrides])
        trained = True
    # a training here ended with the newest checkpoint, however far its last iteration went past `steps`; a run
    # found past them can only be matched by its env steps
    checkpoint = RunDir(run).checkpoint_dirs()[-1] if trained else checkpoint_at(run, steps, args.tolerance)
    keep_checkpoint_policy(checkpoint, kept)
    return kept


# ---------------------------------------------------------------- measuring
def row(candidate: Candidate, reference: str, rules, args) -> dict[str, Any]:
    """The candidate against the reference: cross-play and panels (module docstring)."""
    def progress(who: str):
        return lambda what: print(f"{who}: {what}", flush=True)

    start = time.perf_counter()
    ours = measure_strength(candidate.spec, rules, args.games, args.seed, reference=reference,
                            cross_games=args.cross_games, panel=(), progress=progress(candidate.label))
    cross_s = time.perf_counter() - start
    ours.update(measure_strength(candidate.spec, rules, args.games, args.seed, progress=progress(candidate.label)))
    theirs = measure_strength(reference, rules, args.games, args.seed, progress=progress("reference"))
    panel = {}
    for bot in STRENGTH_PANEL:
        mean, low, high = paired_difference(ours[bot], theirs[bot])
        panel[bot] = {"candidate": win_record(ours[bot]), "reference": win_record(theirs[bot]),
                      "difference": {"mean": mean, "ci95": [low, high]}}
    return {"label": candidate.label, "lever": candidate.lever, "candidate": candidate.spec, "reference": reference,
            "variant": args.variant, "settings": settings(args), "candidate_env_steps": steps_of(candidate.spec),
            "reference_env_steps": steps_of(reference), CROSS_PLAY: win_record(ours[CROSS_PLAY]), "panel": panel,
            "seconds_per_cross_play_game": cross_s / args.cross_games, "notes": candidate.notes,
            "verdict": verdict(win_record(ours[CROSS_PLAY]), panel)}


def settings(args) -> dict[str, Any]:
    return {"games": args.games, "cross_games": args.cross_games, "seed": args.seed}


def verdict(cross: dict[str, Any], panel: dict[str, Any]) -> str:
    """The rule for the default (module docstring), in words."""
    worse = [bot for bot, cell in panel.items() if cell["difference"]["ci95"][1] < 0]
    beats = cross["ci95"][0] > PARITY
    if beats and not worse:
        return "joins the default: ahead in the cross-play beyond the interval, no worse against any panel"
    reasons = []
    if not beats:
        reasons.append("not ahead of parity beyond the interval in the cross-play")
    if worse:
        reasons.append(f"worse against {', '.join(worse)} beyond the paired interval")
    return "stays out: " + "; ".join(reasons)


def percent(cell: dict[str, Any]) -> str:
    low, high = cell["ci95"]
    return f"{100 * cell['win_rate']:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"


def points(difference: dict[str, Any]) -> str:
    low, high = difference["ci95"]
    return f"{100 * difference['mean']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]"


TABLE_HEAD = ("| lever | env steps | cross-play vs the reference (parity 25%) | "
              + " | ".join(f"vs 3 {bot}: candidate (minus reference, points)" for bot in STRENGTH_PANEL)
              + " | s per cross-play game | verdict |\n| --- |" + " --- |" * (len(STRENGTH_PANEL) + 4))


def table_row(result: dict[str, Any]) -> str:
    steps = result.get("candidate_env_steps") or result.get("reference_env_steps")
    cells = [f"{percent(cell['candidate'])} ({points(cell['difference'])})" for cell in result["panel"].values()]
    steps_cell = steps_text(steps) if steps else "not recorded"
    return (f"| {result['label']} | {steps_cell} | {percent(result[CROSS_PLAY])} | " + " | ".join(cells)
            + f" | {result['seconds_per_cross_play_game']:.3f} | {result['verdict']} |")


def load_results(out: Path) -> dict[str, Any]:
    return read_results(out / RESULTS, FORMAT, "rows")


# ---------------------------------------------------------------- command
def parse(argv: list[str]):
    overrides = [a for a in argv if "=" in a and not a.startswith("-") and not a.startswith(("ckpt:", "search:",
                                                                                               "mcts:"))]
    parser = OneLineParser(description=__doc__.splitlines()[0],
                           epilog="Other arguments key=value are launch/train.py overrides given to every training "
                                  "start of --train (the machine's resources.*).")
    parser.add_argument("--list", action="store_true", help="list the levers and stop")
    parser.add_argument("--table", action="store_true", help="print every row kept in <out>/levers.json and stop")
    parser.add_argument("--variant", default="pyludo", help="rule set (conf/variant)")
    parser.add_argument("--reference", help="today's default main: a run, checkpoint or policy folder, or a spec "
                                            "(default: the shipped default 8M main of --variant)")
    parser.add_argument("--lever", choices=list(LEVERS), help="a lever of the table (--list)")
    parser.add_argument("--candidate", help="the candidate main (a run, checkpoint or policy folder, or a spec)")
    parser.add_argument("--label", help="the row's name (default: the lever's)")
    parser.add_argument("--train", action="store_true", help="train a training lever's main first (resumable)")
    parser.add_argument("--train-seed", type=int, default=0, help="training seed of --train")
    parser.add_argument("--steps", type=env_steps, help="env steps of --train (default: the reference's)")
    parser.add_argument("--games", type=positive(int), default=5000, help="games against each panel bot")
    parser.add_argument("--cross-games", type=positive(int), default=10000, help="cross-play games")
    parser.add_argument("--seed", type=int, default=1_000_003, help="dice seed of every measurement")
    parser.add_argument("--tolerance", type=float, default=0.01, help="largest relative difference of env steps")
    parser.add_argument("--again", action="store_true", help="measure again a row kept with the same settings")
    parser.add_argument("--out", type=Path, default=Path("outputs/levers"), help="runs, logs and levers.json")
    args = parser.parse_args([a for a in argv if a not in overrides])
    args.overrides = overrides
    if args.list or args.table:
        return args
    if not args.reference:
        args.reference = str(shipped_reference(args.variant))
    if args.lever is None and args.candidate is None:
        raise UserError("give --lever NAME (--list shows them) or --candidate with --label")
    if args.candidate and not (args.label or args.lever):
        raise UserError("--candidate needs --label NAME, the row's name")
    lever = LEVERS.get(args.lever) if args.lever else None
    if lever is not None and lever.search is not None and (args.train or args.candidate):
        raise UserError(f"--lever {args.lever} searches over the reference main at play time: it has nothing to "
                        "train and no --candidate")
    if lever is not None and lever.search is None and not (args.train or args.candidate):
        raise UserError(f"--lever {args.lever} is a training lever: add --train to train its main, or give the run "
                        "trained with it as --candidate")
    if args.train and args.candidate:
        raise UserError("--train makes the candidate: drop --candidate")
    if not 0 <= args.tolerance < 1:
        raise UserError(f"--tolerance {args.tolerance} is not allowed: give a share in [0, 1)")
    if args.seed < 0:
        raise UserError(f"--seed {args.seed} is not allowed: give a dice seed >= 0")
    return args


def main(argv: list[str]) -> None:
    args = parse(argv)
    if args.list:
        for name, lever in LEVERS.items():
            how = (f"search: {lever.search}" if lever.search else
                   "train: " + " ".join(lever.overrides or ("(the default)",))
                   + "".join(f"; from {share:.0%} of the steps {' '.join(o)}" for share, o in lever.later))
            print(f"{name:<22} {lever.what} ({how})")
        return
    if args.table:
        results = load_results(args.out)
        print(TABLE_HEAD)
        for result in results["rows"].values():
            print(table_row(result))
        return
    rules, _ = benchmark_rules(args.variant, [], players=PLAYERS)
    reference = as_spec(args.reference)
    reference_steps = steps_of(reference)
    with only_driver(args.out):
        results = load_results(args.out)
        lever = LEVERS.get(args.lever) if args.lever else None
        label = args.label or args.lever
        if lever is not None and lever.search is not None:
            candidate = Candidate(label, lever.search.format(reference=policy_path(reference)), args.lever)
        elif args.train:
            steps = args.steps or reference_steps
            if steps is None:
                raise UserError(f"{args.reference} records no env steps: give --steps, the env steps to train to")
            candidate = Candidate(label, f"ckpt:{train_lever(args.lever, lever, steps, args)}", args.lever)
        else:
            candidate = Candidate(label, as_spec(args.candidate), args.lever)
        refused = check_equal_steps(reference_steps, steps_of(candidate.spec), args.tolerance)
        if refused:
            raise UserError(refused)
        if reference_steps is None or steps_of(candidate.spec) is None:
            candidate.notes.append("env steps not recorded for both mains: equal env steps not checked")
            print(f"note: {candidate.notes[-1]}", flush=True)
        kept = results["rows"].get(label)
        if kept and not args.again and kept["settings"] == settings(args) and kept["candidate"] == candidate.spec \
                and kept["reference"] == reference:
            result = kept
            print(f"{label}: measured before with these settings (--again measures it again)", flush=True)
        else:
            result = row(candidate, reference, rules, args)
            results["rows"][label] = result
            write_text(args.out / "levers.json", json.dumps(results, indent=1) + "\n")
    print(TABLE_HEAD)
    print(table_row(result))


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except KeyboardInterrupt:
        print("\ninterrupted: a training under way saved its checkpoint and goes on with the same command; the "
              "measurement of this row starts over", file=sys.stderr, flush=True)
        sys.exit(130)
    except input_errors() as err:
        fail(err)
