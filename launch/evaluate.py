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

A ``py:`` bot's ``choose`` may take at most ``move_time_limit`` seconds per
call (default 30; a call decides a batch of up to ``chunk`` games, so the
limit is per call, not per game; ``move_time_limit=null``: no limit); what it
prints goes to stderr, so stdout holds the table alone.

Any user error (an unknown key, a value of the wrong type, a bad player spec,
rules the variant refuses, a bot that answers illegally or too slowly) prints
one line to stderr and exits with status 2, and leaves no run folder behind.
Ctrl-C stops within a second or two with one line and exit status 130,
writing no report.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import launch  # noqa: F401  (first: it refuses a Python other than 3.11 in one line)

# isort: split
import hydra
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from launch.cli import (
    MAX_GAMES,
    MAX_PLIES,
    UserError,
    catch_interrupts,
    check_hydra_outputs,
    check_integers,
    check_known_keys,
    check_output,
    check_seconds,
    check_variant_overrides,
    compose,
    emit,
    fail,
    input_errors,
    remove_hydra_run_dir,
    stop_interrupted,
    write_text,
)
from policies.ranges import Range
from policies.tournament import PATHS


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
    """Show a progress bar on stderr."""
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
    move_time_limit: float | None = 30.0
    """Seconds one call of a py: bot's choose may take (one batch of up to `chunk` games); None: no limit."""

    RANGES: ClassVar[dict[str, Range]] = {
        "games": Range(1, MAX_GAMES), "chunk": Range(1, MAX_GAMES), "max_plies": Range(1, MAX_PLIES),
        "threads": Range(0, 256), "move_time_limit": Range(0, low_open=True, null_ok=True)}
    """What each numeric setting allows: `check_settings` checks these, the reference page shows them."""
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"path": PATHS}
    """Named settings' choices (`policies.tournament.play_tournament` checks them)."""
    ALLOWED: ClassVar[dict[str, str]] = {
        "players": "player specs: bot names, `py:package.module:Class` or `ckpt:<path>`; at least one",
        "record_player": "an integer in [0, len(players) - 1]",
        "seed": "an integer >= 0"}
    """What settings allow whose check is not a fixed range (it depends on another setting, or is a parse)."""


ConfigStore.instance().store(name="evaluate_schema", node=EvaluateConfig)


def check_overrides(argv: list[str]) -> None:
    """Compose the config with the command-line overrides first, so a bad one is a single line, not Hydra's page."""
    if any(arg.startswith("-") for arg in argv):
        return  # --help, --cfg, --multirun ...: Hydra's own business
    check_variant_overrides(argv, players_from="the length of players")
    cfg = compose("evaluate", argv, return_hydra_config=True)
    settings = OmegaConf.to_container(cfg)
    settings.pop("hydra")
    check_known_keys(settings, EvaluateConfig)  # +foo=1 adds a key the schema does not check
    check_settings(settings, len(settings["players"]))  # before Hydra makes the run folder
    check_hydra_outputs(cfg, ("out", "record"))


def check_settings(settings: EvaluateConfig | dict[str, Any], players: int) -> None:
    """`EvaluateConfig.RANGES`, and `record_player` an index into the `players` seats."""
    ranges = {**EvaluateConfig.RANGES, "record_player": (0, max(0, players - 1))}
    check_integers(settings, ranges)
    seconds = EvaluateConfig.RANGES["move_time_limit"]
    limit = settings.get("move_time_limit") if isinstance(settings, dict) else settings.move_time_limit
    check_seconds("move_time_limit", limit, positive=seconds.low_open, none_ok=seconds.null_ok)


class ReportWritten(UserError):
    """A failure after the report was written (stdout on a full disk): the run folder stays."""


def evaluate(cfg: EvaluateConfig) -> Path:
    from ludo_env.rules import Rules
    from policies.players import MoveTimeout
    from policies.tournament import play_tournament

    check_settings(cfg, len(cfg.players))
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
            move_time_limit=cfg.move_time_limit,
        )
    except MoveTimeout as err:
        raise UserError(f"{err} (move_time_limit={cfg.move_time_limit:g} s per call: raise it, or "
                        "move_time_limit=null for none)") from None
    except input_errors() as err:
        raise UserError(str(err)) from None
    try:  # the report first: a stdout that fails (a full disk) must not cost it
        write_text(out, result.to_json() + "\n")
    except OSError as err:
        raise UserError(f"out={out}: cannot write the report there ({err.strerror or err})") from None
    lines = [result.table(), f"report: {out}"]
    if cfg.record:
        lines.append(f"records: {cfg.record} (decisions of entry {cfg.record_player}, "
                     f"{cfg.players[cfg.record_player]}, appended)")
    try:
        emit("\n".join(lines))
    except UserError as err:
        raise ReportWritten(f"{err}: the report is in {out}") from None
    return out


@hydra.main(config_path="../conf", config_name="evaluate", version_base=None)
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    config: EvaluateConfig = OmegaConf.to_object(cfg)  # type: ignore[assignment]
    try:
        evaluate(config)
    except UserError as err:
        if not isinstance(err, ReportWritten):  # refused, or failed before the report: no run folder stays
            remove_hydra_run_dir(HydraConfig.get().runtime.output_dir, "evaluate.log")
        fail(err)
    except KeyboardInterrupt:
        remove_hydra_run_dir(HydraConfig.get().runtime.output_dir, "evaluate.log")
        raise


if __name__ == "__main__":
    catch_interrupts()
    try:
        check_overrides(sys.argv[1:])
        main()
    except UserError as err:
        fail(err)
    except KeyboardInterrupt:
        stop_interrupted("evaluation stopped, no report written")
