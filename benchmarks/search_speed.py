"""Milliseconds per move of the look-ahead players, one decision at a time and in batches, on one pinned core.

    python benchmarks/search_speed.py --value outputs/train/<td run> [--policy outputs/train/<ppo run>]
    python benchmarks/search_speed.py --value <td run> --json
    python benchmarks/search_speed.py --policy <ppo run> --sims 16 64 256   # the search levers of benchmarks/levers.py

What is measured
  For each player spec, the time of ``player.act`` on real mid-game decisions
  (positions reached by random legal moves from new games, `--variant`
  rules): *single* asks for one decision per call, as a person playing
  against the agent would (`launch/play.py`); *batched* asks for `--batch`
  decisions per call, as the tournament does, and is reported per decision.
  The specs are ``search:<value>?depth=1``, ``depth=2`` and ``depth=3`` over
  the TD(λ) value (`--value`), and, with `--policy` (a PPO policy), depths 1
  and 2 over its critic, the other seats moving by its own policy
  (``opponent=policy`` at depths 2 and 3: one and two replies looked at), and
  ``mcts:<policy>?sims=N`` for each of `--sims`. Give `--value`, `--policy`
  or both.
  Everything is loaded and compiled before timing; each number is the median
  over `--repeats` interleaved timings. Target: depth 2 at most 20 ms per
  move (single).

Pinning: the process is bound to one core (`--core`) and numba and torch to
one thread each, so the figures do not depend on what else the machine runs
on its other core.
"""
from __future__ import annotations

import json
import os
import statistics
import time

os.environ["NUMBA_NUM_THREADS"] = "1"

import numpy as np

from launch.cli import OneLineParser, fail, input_errors, positive
from ludo_env.engine import compile_rules, legal_masks, new_batch, step_batch
from ludo_env.rules import Rules
from policies.players import make_player

TARGET_DEPTH2_MS = 20.0


def decisions(variant: str, count: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`count` decision states from random-move games at varied points of play."""
    tab = compile_rules(Rules.load(variant))
    rng_np = np.random.default_rng(seed)
    states, rng = new_batch(tab, count, seed=seed, first_seats=np.arange(count) % 4)
    masks = np.zeros((count, 4), dtype=np.int8)
    legal_masks(states, tab, masks)
    events = np.zeros(count, dtype=np.int32)
    plies = rng_np.integers(10, 150, size=count)
    out = states.copy()
    for ply in range(int(plies.max()) + 1):
        done = plies == ply
        out[done] = states[done]
        legal = np.where(masks == 1, rng_np.random(masks.shape), -1.0)
        step_batch(states, tab, rng, legal.argmax(axis=1), events, masks)
    legal_masks(out, tab, masks)
    waiting = masks.any(axis=1)
    return out[waiting], tab, masks[waiting]


def time_player(player, states, tab, masks, batch: int) -> tuple[float, float]:
    """(ms per move asked one at a time, ms per move asked `batch` at a time)."""
    n = states.shape[0]
    start = time.perf_counter()
    for i in range(n):
        player.act(states[i:i + 1], tab, masks[i:i + 1])
    single = (time.perf_counter() - start) / n * 1e3
    start = time.perf_counter()
    for i in range(0, n, batch):
        player.act(states[i:i + batch], tab, masks[i:i + batch])
    batched = (time.perf_counter() - start) / n * 1e3
    return single, batched


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--value", help="a TD(lambda) run or policy folder")
    parser.add_argument("--policy", help="a PPO run or policy folder: its critic and policy, and MCTS")
    parser.add_argument("--variant", default="pyludo")
    parser.add_argument("--positions", type=positive(int), default=64)
    parser.add_argument("--batch", type=positive(int), default=64)
    parser.add_argument("--sims", type=positive(int), nargs="+", default=[32], help="MCTS simulations, one player each")
    parser.add_argument("--repeats", type=positive(int), default=3)
    parser.add_argument("--core", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (args.value or args.policy):
        parser.error("give --value (a TD(lambda) value), --policy (a PPO policy) or both")
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core})
    import torch

    torch.set_num_threads(1)
    specs = [f"search:{args.value}?depth={d}" for d in (1, 2, 3)] if args.value else []
    if args.policy:
        specs += [f"search:{args.policy}?depth={d}" for d in (1, 2)]
        specs += [f"search:{args.policy}?depth={d}&opponent=policy" for d in (2, 3)]
        specs += [f"mcts:{args.policy}?sims={sims}" for sims in args.sims]
    states, tab, masks = decisions(args.variant, args.positions, seed=7)
    players = {spec: make_player(spec) for spec in specs}
    for player in players.values():  # compile and load everything before timing
        player.act(states[:2], tab, masks[:2])
    timings: dict[str, list[tuple[float, float]]] = {spec: [] for spec in specs}
    for _ in range(args.repeats):
        for spec, player in players.items():
            timings[spec].append(time_player(player, states, tab, masks, args.batch))
    rows = [{"player": spec,
             "ms_per_move_single": statistics.median(t[0] for t in runs),
             "ms_per_move_batched": statistics.median(t[1] for t in runs)} for spec, runs in timings.items()]
    if args.json:
        print(json.dumps({"positions": int(states.shape[0]), "batch": args.batch, "variant": args.variant,
                          "rows": rows}, indent=1))
        return
    print(f"{states.shape[0]} {args.variant} decisions, one pinned core, medians of {args.repeats}")
    print(f"{'player':<70} {'single ms/move':>15} {'batched ms/move':>16}")
    for row in rows:
        print(f"{row['player']:<70} {row['ms_per_move_single']:>15.2f} {row['ms_per_move_batched']:>16.3f}")
    if args.value:
        depth2 = next(r for r in rows if r["player"] == f"search:{args.value}?depth=2")
        verdict = "meets" if depth2["ms_per_move_single"] <= TARGET_DEPTH2_MS else "misses"
        print(f"depth 2 over the TD value: {depth2['ms_per_move_single']:.2f} ms per move, {verdict} the "
              f"{TARGET_DEPTH2_MS:.0f} ms target")


if __name__ == "__main__":
    try:
        main()
    except input_errors() as err:  # a bad variant or player folder (damaged or empty weights): one line
        fail(err)
