"""Does averaging a run's last snapshots make a stronger policy than its last one? Paired, per run.

    python benchmarks/snapshot_average.py <run> [<run> ...] [--last 5] [--games 5000] [--seed 1000003]
    python benchmarks/snapshot_average.py <run> --opponents random,hybrid,heuristic000

For each training run, the weights of its last ``--last`` league snapshots
(``main@<iteration>`` in ``<run>/league.db``, evicted ones included, by
iteration) are averaged tensor by tensor into one policy of the same kind,
written to ``<run>/averaged_last<K>/``. The last snapshot (the run's policy
when it ended: the loop freezes main at its last iteration) and the average
then play the same ``--games`` games against each opponent at every other seat, in
the rules the run was trained in (its ``policy.json``), and each line gives
both win rates and the paired difference with its 95% interval (as
`policies.tournament.paired_difference`: the same dice and seats, game by game).

Why: late DQN iterates move by a point or two from evaluation to evaluation,
and averaging weights along the end of a run (as in stochastic weight
averaging) is the usual cure for iterate noise. What it found is on the
results page "Averaging a run's last snapshots" (docs/pages/results/).
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from launch.cli import OneLineParser, UserError, check_integers, fail, input_errors
from ludo_env.rules import Rules
from policies.checkpoints import load_weights, read_meta, write_policy
from policies.league.league import member_policy_folder
from policies.league.store import DB_NAME, LeagueStore
from policies.saved import SAVED_MODULE_KINDS
from policies.tournament import first_entry_wins, paired_difference, wilson_interval


def snapshot_folders(run: Path) -> list[Path]:
    """The policy folders of a run's snapshots, oldest first (by iteration)."""
    db = run / DB_NAME
    if not db.is_file():
        raise UserError(f"'{run}' has no {DB_NAME}: give a PPO or DQN run folder")
    with LeagueStore.open(db, create=False, read_only=True) as store:
        snapshots = sorted(store.members(kinds=["snapshot"]), key=lambda m: m.iteration or 0)
    return [member_policy_folder(m, run) for m in snapshots]


def average_policy(folders: list[Path], dest: Path) -> Path:
    """One policy whose every tensor is the mean of `folders`' (same kind, same shapes)."""
    metas = [read_meta(f) for f in folders]
    kinds = {m["kind"] for m in metas}
    if len(kinds) != 1 or next(iter(kinds)) not in SAVED_MODULE_KINDS:
        raise UserError(f"snapshots of kinds {sorted(kinds)} cannot be averaged: "
                        f"one of {', '.join(SAVED_MODULE_KINDS)} only")
    weights = [load_weights(f) for f in folders]
    if any(w.keys() != weights[0].keys() or any(w[k].shape != weights[0][k].shape for k in w) for w in weights):
        raise UserError(f"the snapshots in {folders[0].parent} differ in their tensors: the network changed mid-run")
    mean = {k: torch.stack([w[k].float() for w in weights]).mean(0).to(weights[-1][k].dtype) for k in weights[-1]}
    return write_policy(dest, metas[-1]["kind"], metas[-1]["model_config"], mean, obs_dim=metas[-1]["obs_dim"])


def compare(run: Path, last: int, games: int, seed: int, opponents: list[str]) -> None:
    folders = snapshot_folders(run)
    if len(folders) < 2:
        raise UserError(f"'{run}' has {len(folders)} snapshot(s): averaging needs at least 2")
    chosen = folders[-last:]
    averaged = average_policy(chosen, run / f"averaged_last{len(chosen)}")
    meta = read_meta(chosen[-1])["model_config"]
    rules = Rules.recorded(meta["variant"], players=int(meta["players"]))
    print(f"{run}: the average of {', '.join(f.name for f in chosen)} -> {averaged}")
    for opponent in opponents:
        wins_last = first_entry_wins(f"ckpt:{chosen[-1]}", opponent, rules, games, seed)
        wins_avg = first_entry_wins(f"ckpt:{averaged}", opponent, rules, games, seed)
        mean, low, high = paired_difference(wins_avg, wins_last)
        (lo_l, hi_l), (lo_a, hi_a) = (wilson_interval(int(w.sum()), games) for w in (wins_last, wins_avg))
        print(f"  vs {rules.players - 1} {opponent}: last {wins_last.mean():.1%} [{lo_l:.1%}, {hi_l:.1%}], averaged "
              f"{wins_avg.mean():.1%} [{lo_a:.1%}, {hi_a:.1%}], averaged - last {mean:+.1%} "
              f"[{low:+.1%}, {high:+.1%}] ({games} games, seed {seed})")


def main(argv: list[str]) -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="run", help="a PPO or DQN training run folder")
    parser.add_argument("--last", type=int, default=5, help="snapshots averaged, the newest (at least 2)")
    parser.add_argument("--games", type=int, default=5000, help="games per opponent (at least 2)")
    parser.add_argument("--seed", type=int, default=1000003, help="dice seed: the same games for both")
    parser.add_argument("--opponents", default="random,hybrid", help="opponents, comma-separated")
    args = parser.parse_intermixed_args(argv)
    check_integers(vars(args), prefix="--")
    if args.last < 2:
        parser.error(f"--last {args.last} is not allowed: give 2 or more")
    if args.games < 2:
        parser.error(f"--games {args.games} is not allowed: give 2 or more, for a paired interval")
    opponents = [o for o in args.opponents.split(",") if o]
    for run in args.runs:
        compare(Path(run), args.last, args.games, args.seed, opponents)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except input_errors() as err:
        fail(err)
