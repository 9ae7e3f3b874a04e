"""Play random-move games under any variant and print what happened.

    python launch/simulate.py variant=classic games=10000 seed=0
    python launch/simulate.py variant=classic variant.players=2 variant.blockades=true

Options are Hydra ``key=value`` overrides of ``conf/simulate.yaml``, typed by
`SimulateConfig` (``--help`` lists them with their defaults): ``variant`` (a
file of ``conf/variant``, or the path of a YAML file of rule fields), ``games``,
``seed``, ``max_plies``, ``specialised`` (true: the engine kernel compiled for
these rules, about a fifth faster, after a compilation of its own the first time
a machine meets them; default false), and any rule field as
``variant.<field>=value``, as every command that plays games takes it. A rule
field given bare (``players=2 blockades=true``) is taken as ``variant.<field>``
too. It reports each seat's share of wins and mean finishing place, the mean
game length, truncated games and the speed. Bad input (an unknown key or rule,
a value of the wrong type, rules the variant refuses) exits 2 with one line.
Games are played in slices of `SLICE` (the same games as in one call: each has
its own dice), so Ctrl-C stops within a second or two with one line and exit
status 130.
"""
from __future__ import annotations

import dataclasses
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import launch  # noqa: F401  (first: it refuses a Python other than 3.11 in one line)

# isort: split
import numpy as np
from hydra.core.config_store import ConfigStore

from launch.cli import (
    INT64_MAX,
    MAX_GAMES,
    MAX_PLIES,
    catch_interrupts,
    check_integers,
    check_variant_overrides,
    compose_options,
    emit,
    fail,
    input_errors,
    options_help,
    stop_interrupted,
)
from ludo_env.engine import compile_rules, new_batch, play_random
from ludo_env.engine.layout import OVER, PLACES
from ludo_env.rules import Rules


@dataclass
class SimulateConfig:
    variant: dict[str, Any] = field(default_factory=dict)
    """Rule fields, filled from conf/variant/<name>.yaml by the `variant` group, or from a YAML file of rule fields
    (variant=<path>.yaml)."""
    games: int = 10_000
    """Random-move games to play; game g rolls stream g of the seed."""
    seed: int = 0
    """Dice of game g: stream g of this seed."""
    max_plies: int = 10_000
    """Die rolls after which a game is stopped and counted as truncated."""
    specialised: bool = False
    """Play with the engine kernel compiled for these rules (faster, after a compilation of its own)."""


ConfigStore.instance().store(name="simulate_schema", node=SimulateConfig)
RANGES = {"games": (1, MAX_GAMES), "max_plies": (1, MAX_PLIES), "seed": (0, INT64_MAX)}
SLICE = 10_000
"""Games per engine call: Python sees Ctrl-C only between calls (random games: a fraction of a second on one core)."""
VARIANT_FILE = "file_"
"""Prefix of the name under which a variant=<path>.yaml file is offered to Hydra as a choice of the variant group."""


def play_in_slices(states, tab, rng, max_plies: int, specialised: bool, size: int = SLICE):
    """`play_random` over the batch, `size` games per call; row b keeps its own dice stream, so the games (and the
    moves returned) are those of one call over the whole batch."""
    moves = np.zeros(states.shape[0], dtype=np.int64)
    for a in range(0, states.shape[0], size):
        b = min(a + size, states.shape[0])
        moves[a:b] = play_random(states[a:b], tab, rng[a:b], max_plies, specialised=specialised)
    return moves


def parse(argv: list[str]) -> tuple[SimulateConfig, Rules]:
    """The settings and the rules from key=value arguments; every problem a `UserError` or a `RulesError` of one
    line."""
    rule_fields = {f.name for f in dataclasses.fields(Rules)}
    own = {f.name for f in dataclasses.fields(SimulateConfig)}
    overrides = []
    for arg in argv:
        key, eq, value = arg.partition("=")
        if eq and key in rule_fields and key not in own:  # a rule field given bare: variant.<field>
            arg = f"variant.{arg}"
        elif eq and key == "variant" and value.endswith((".yaml", ".yml")):
            arg = f"variant={variant_file(value)}"
        overrides.append(arg)
    check_variant_overrides(overrides, players_from=None)
    cfg: SimulateConfig = compose_options("simulate", overrides, SimulateConfig, "simulate",
                                          also="any rule field as variant.<field>=value")
    check_integers(cfg, RANGES)
    return cfg, Rules.load(dict(cfg.variant))


def variant_file(path: str) -> str:
    """Offer the rules of the YAML file `path` (checked by `Rules.load`) to Hydra as a choice of the variant
    group; the choice's name."""
    rules = Rules.load(path)
    name = VARIANT_FILE + re.sub(r"\W", "_", path)
    fields = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(rules).items()}
    ConfigStore.instance().store(group="variant", name=name, node=fields)
    return name


def main(argv: list[str]) -> int:
    if any(arg in ("-h", "--help") for arg in argv):
        emit(options_help(__doc__, "simulate", SimulateConfig))
        return 0
    cfg, rules = parse(argv)
    tab = compile_rules(rules)
    warm_states, warm_rng = new_batch(tab, 1, 0)
    play_random(warm_states, tab, warm_rng, specialised=cfg.specialised)  # compile before timing
    states, rng = new_batch(tab, cfg.games, cfg.seed)
    start = time.perf_counter()
    moves = play_in_slices(states, tab, rng, cfg.max_plies, cfg.specialised)
    elapsed = time.perf_counter() - start
    done = states[:, OVER] == 1
    places = states[done, PLACES : PLACES + rules.players]
    lines = [f"{rules.name}, {rules.players} players, {cfg.games:,} random-move games, seed {cfg.seed}"]
    for seat in range(rules.players):
        wins = (places[:, seat] == 1).mean() if len(places) else float("nan")
        lines.append(f"  seat {seat}: wins {wins:6.1%}   mean place {places[:, seat].mean():.2f}")
    lines.append(f"  mean moves per game {moves[done].mean():.1f}, truncated games {int((~done).sum())}")
    lines.append(f"  {cfg.games / elapsed:,.0f} games/s (after compilation)")
    emit("\n".join(lines))
    return 0


if __name__ == "__main__":
    catch_interrupts()
    try:
        sys.exit(main(sys.argv[1:]))
    except input_errors() as err:
        fail(err)
    except KeyboardInterrupt:
        stop_interrupted("simulation stopped")
