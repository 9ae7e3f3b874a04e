"""Play random-move games under any variant and print what happened.

    python launch/simulate.py variant=classic games=10000 seed=0
    python launch/simulate.py variant=classic players=2 blockades=true

Arguments are key=value: `variant` (a name in conf/variant or a YAML path),
`games`, `seed`, `max_plies`, `specialised` (true: the engine kernel compiled for these
rules, about a fifth faster, after a compilation of its own the first time a machine meets them; default
false), and any rule field as an override. It reports
each seat's share of wins and mean finishing place, the mean game length,
truncated games and the speed. Bad input exits with one line. Games are
played in slices of `SLICE` (the same games as in one call: each has its own
dice), so Ctrl-C stops within a second or two with one line and exit status 130.
"""
from __future__ import annotations

import sys
import time

import numpy as np
import yaml

from launch.cli import MAX_GAMES, MAX_PLIES, UserError, catch_interrupts, check_integers, emit, stop_interrupted
from ludo_env.engine import compile_rules, new_batch, play_random
from ludo_env.engine.layout import OVER, PLACES
from ludo_env.rules import Rules, RulesError

RUN_KEYS = {"variant": "classic", "games": 10_000, "seed": 0, "max_plies": 10_000, "specialised": False}
SLICE = 10_000
"""Games per engine call: Python sees Ctrl-C only between calls (random games: a fraction of a second on one core)."""


def play_in_slices(states, tab, rng, max_plies: int, specialised: bool, size: int = SLICE):
    """`play_random` over the batch, `size` games per call; row b keeps its own dice stream, so the games (and the
    moves returned) are those of one call over the whole batch."""
    moves = np.zeros(states.shape[0], dtype=np.int64)
    for a in range(0, states.shape[0], size):
        b = min(a + size, states.shape[0])
        moves[a:b] = play_random(states[a:b], tab, rng[a:b], max_plies, specialised=specialised)
    return moves


def parse(argv: list[str]) -> tuple[dict, dict]:
    run, overrides = dict(RUN_KEYS), {}
    for arg in argv:
        key, sep, raw = arg.partition("=")
        if not sep or not key:
            raise RulesError(f"argument '{arg}' is not key=value: use e.g. variant=classic games=1000")
        value = yaml.safe_load(raw) if raw else ""
        (run if key in RUN_KEYS else overrides)[key] = value
    for key in ("games", "seed", "max_plies"):
        lowest = 0 if key == "seed" else 1
        if not isinstance(run[key], int) or isinstance(run[key], bool) or run[key] < lowest:
            raise RulesError(f"{key}={run[key]!r} is not allowed: give an integer >= {lowest}")
    if not isinstance(run["specialised"], bool):
        raise RulesError(f"specialised={run['specialised']!r} is not allowed: give true or false")
    try:
        check_integers(run, {"games": (1, MAX_GAMES), "max_plies": (1, MAX_PLIES)})
    except UserError as err:
        raise RulesError(str(err)) from None
    return run, overrides


def main(argv: list[str]) -> int:
    try:
        run, overrides = parse(argv)
        rules = Rules.load(str(run["variant"]), **overrides)
    except RulesError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    tab = compile_rules(rules)
    warm_states, warm_rng = new_batch(tab, 1, 0)
    play_random(warm_states, tab, warm_rng, specialised=run["specialised"])  # compile before timing
    states, rng = new_batch(tab, run["games"], run["seed"])
    start = time.perf_counter()
    moves = play_in_slices(states, tab, rng, run["max_plies"], run["specialised"])
    elapsed = time.perf_counter() - start
    done = states[:, OVER] == 1
    places = states[done, PLACES : PLACES + rules.players]
    lines = [f"{rules.name}, {rules.players} players, {run['games']:,} random-move games, seed {run['seed']}"]
    for seat in range(rules.players):
        wins = (places[:, seat] == 1).mean() if len(places) else float("nan")
        lines.append(f"  seat {seat}: wins {wins:6.1%}   mean place {places[:, seat].mean():.2f}")
    lines.append(f"  mean moves per game {moves[done].mean():.1f}, truncated games {int((~done).sum())}")
    lines.append(f"  {run['games'] / elapsed:,.0f} games/s (after compilation)")
    try:
        emit("\n".join(lines))
    except UserError as err:  # a full disk under stdout
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    catch_interrupts()
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        stop_interrupted("simulation stopped")
