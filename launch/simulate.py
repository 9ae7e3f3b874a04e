"""Play random-move games under any variant and print what happened.

    python launch/simulate.py variant=classic games=10000 seed=0
    python launch/simulate.py variant=classic players=2 blockades=true

Arguments are key=value: `variant` (a name in conf/variant or a YAML path),
`games`, `seed`, `max_plies`, `specialised` (true: the engine kernel compiled for these
rules, about a fifth faster, after about 10-14 s of compilation (a quiet core) the first time a machine meets
them; default false), and any rule field as an override. It reports
each seat's share of wins and mean finishing place, the mean game length,
truncated games and the speed. Bad input exits with one line.
"""
from __future__ import annotations

import sys
import time

import yaml

from launch.cli import MAX_GAMES, MAX_PLIES, UserError, check_integers
from ludo_env.engine import compile_rules, new_batch, play_random
from ludo_env.engine.layout import OVER, PLACES
from ludo_env.rules import Rules, RulesError

RUN_KEYS = {"variant": "classic", "games": 10_000, "seed": 0, "max_plies": 10_000, "specialised": False}


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
    moves = play_random(states, tab, rng, run["max_plies"], specialised=run["specialised"])
    elapsed = time.perf_counter() - start
    done = states[:, OVER] == 1
    places = states[done, PLACES : PLACES + rules.players]
    print(f"{rules.name}, {rules.players} players, {run['games']:,} random-move games, seed {run['seed']}")
    for seat in range(rules.players):
        wins = (places[:, seat] == 1).mean() if len(places) else float("nan")
        print(f"  seat {seat}: wins {wins:6.1%}   mean place {places[:, seat].mean():.2f}")
    print(f"  mean moves per game {moves[done].mean():.1f}, truncated games {int((~done).sum())}")
    print(f"  {run['games'] / elapsed:,.0f} games/s (after compilation)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
