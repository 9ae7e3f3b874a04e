"""Play a tournament between players and report wins, places, game length and ratings.

    python launch/evaluate.py players='[hybrid,random,random,random]' games=10000 variant=classic seed=0
    python launch/evaluate.py players='[py:mybots:FurthestBehind,fast]' variant=ucsd variant.blockades=true
    python launch/evaluate.py players='[ckpt:runs/ppo/module,hybrid,hybrid,hybrid]' games=2000
    python launch/evaluate.py players='[hybrid,random,random,random]' games=5 variant=pyludo record=records.jsonl

Configuration: ``conf/evaluate.yaml``, typed by `EvaluateConfig` below.
`players` lists one spec per seat (a bot name, ``py:package.module:Class``
or ``ckpt:<path>``, see `policies.players`); its length is the player count.
`variant` picks a rule set from ``conf/variant`` (a Hydra config group) and
``variant.<field>=value`` changes one rule. The table goes to stdout, the
progress bar to stderr, the JSON report to `out` (default: the Hydra run
folder ``outputs/evaluate/<time>/evaluate.json``; the working directory
never changes). Seating, dice, ratings and game length are defined in
`policies.tournament`. ``record=<file>`` appends every decision of the entry
``record_player`` (default 0) to a JSONL record file (`policies.records`), the
data ``+exp=imitate`` learns from.

Any user error (an unknown key, a value of the wrong type, a bad player spec,
rules the variant refuses, a bot that answers illegally) prints one line to
stderr and exits with status 2.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from launch.cli import (
    MAX_GAMES,
    MAX_PLIES,
    UserError,
    check_hydra_outputs,
    check_integers,
    check_output,
    check_variant_overrides,
    compose,
    fail,
    input_errors,
    write_text,
)


@dataclass
class EvaluateConfig:
    players: list[str] = field(default_factory=lambda: ["hybrid", "random", "random", "random"])
    """One player spec per seat."""
    games: int = 10_000
    """Games to play; a multiple of the player count seats everyone equally."""
    variant: dict[str, Any] = field(default_factory=dict)
    """Rule fields, filled from conf/variant/<name>.yaml by the `variant` group."""
    seed: int = 0
    """Dice of game g: stream g of this seed."""
    max_plies: int = 10_000
    """Die rolls after which a game is stopped and counted as truncated."""
    chunk: int = 8_192
    """Games played per batch (the progress bar moves once per chunk)."""
    path: str = "auto"
    """auto, fast (built-in bots only) or generic."""
    progress: bool = True
    out: str | None = None
    """Where the JSON report goes; default the Hydra run folder."""
    record: str | None = None
    """Append every decision of entry `record_player` to this JSONL record file (policies.records), e.g. for
    +exp=imitate; plays on the generic path (the same games)."""
    record_player: int = 0
    """The entry (index into `players`) whose decisions `record` keeps."""
    threads: int = 0
    """Threads playing chunks at once (policies.tournament, Threads); 0: one per core this process may use. The
    results are the same for any count; a py: bot or a recording plays on one thread."""


ConfigStore.instance().store(name="evaluate_schema", node=EvaluateConfig)


def check_overrides(argv: list[str]) -> None:
    """Compose the config with the command-line overrides first, so a bad one is a single line, not Hydra's page."""
    if any(arg.startswith("-") for arg in argv):
        return  # --help, --cfg, --multirun ...: Hydra's own business
    check_variant_overrides(argv, players_from="the length of players")
    cfg = compose("evaluate", argv, return_hydra_config=True)
    settings = OmegaConf.to_container(cfg)
    settings.pop("hydra")
    check_integers(settings, integer_ranges(len(settings["players"])))  # before Hydra makes the run folder
    check_hydra_outputs(cfg, ("out", "record"))


def integer_ranges(players: int) -> dict[str, tuple[int, int]]:
    return {"games": (1, MAX_GAMES), "chunk": (1, MAX_GAMES), "max_plies": (1, MAX_PLIES),
            "record_player": (0, max(0, players - 1)), "threads": (0, 256)}


def evaluate(cfg: EvaluateConfig) -> Path:
    from ludo_env.rules import Rules
    from policies.tournament import play_tournament

    check_integers(cfg, integer_ranges(len(cfg.players)))
    out = check_output(cfg.out or "evaluate.json", "out")  # before the tournament, not after it
    if cfg.record:
        check_output(cfg.record, "record")
    try:
        if not cfg.players:
            raise UserError("players=[] is not allowed: list one player spec per seat")
        rules = Rules.load(dict(cfg.variant), players=len(cfg.players))
        result = play_tournament(
            list(cfg.players),
            cfg.games,
            rules,
            cfg.seed,
            cfg.progress,
            max_plies=cfg.max_plies,
            chunk=cfg.chunk,
            path=cfg.path,
            record=cfg.record,
            record_entry=cfg.record_player,
            threads=cfg.threads,
        )
    except input_errors() as err:
        raise UserError(str(err)) from None
    print(result.table())
    try:
        write_text(out, result.to_json() + "\n")
    except OSError as err:
        raise UserError(f"out={out}: cannot write the report there ({err.strerror or err})") from None
    print(f"report: {out}")
    if cfg.record:
        print(f"records: {cfg.record} (decisions of entry {cfg.record_player}, {cfg.players[cfg.record_player]}, "
              "appended)")
    return out


@hydra.main(config_path="../conf", config_name="evaluate", version_base=None)
def main(cfg: DictConfig) -> None:
    config: EvaluateConfig = OmegaConf.to_object(cfg)  # type: ignore[assignment]
    try:
        evaluate(config)
    except UserError as err:
        fail(err)


if __name__ == "__main__":
    try:
        check_overrides(sys.argv[1:])
    except UserError as err:
        fail(err)
    main()
