"""Tournaments: many games between a fixed list of players, with fair seating and replayable dice.

    result = play_tournament(["hybrid", "random", "random", "random"], games=10_000, rules="classic", seed=0)
    print(result.table())
    Path("out.json").write_text(result.to_json())

Players and identities
    `players` lists one spec per seat (`policies.players.make_player`); its
    length is the player count of the rules. An *entry* is one position in the
    list, a *player* is one distinct spec: ``[hybrid, random, random, random]``
    has four entries and two players. Entries play as separate seats; each
    player is built once and asked, in one batch, for every game where any of
    its entries is to move. The report has one row per player, pooled over its
    entries: `games` counts seat-games (3 × games for the three randoms), so a
    win rate is per seat and comparable with 1 / players. The Wilson interval
    treats those seat-games as independent; copies in one game cannot both
    win, which makes the interval slightly wide, not narrow.

Seating (any number of games; exact balance at multiples of the player count)
    Seat 0 always moves first and entries rotate through the seats: game g
    seats entry ``base[(s + g) % n]`` at seat s, where `base` runs through the
    (n-1)! orders of the entries that start with entry 0, changing every n
    games. Every block of n consecutive games (from game 0) puts every entry
    in every seat once, so each entry moves first in exactly 1/n of them; every
    n! games, every seating order occurs once, so no entry always sits just
    after another (who chases whom matters for captures). When `games` is not
    a multiple of n, seat counts differ by at most one; the report says so.

Randomness and replay
    Game g rolls stream g of `seed` (`ludo_env.engine.rng.streams`), the same
    dice as game g of ``new_batch(tab, games, seed)``. Built-in bots draw from
    a second set of streams, of ``seed ^ BOT_SEED_SALT``, also one per game and
    shared by the seats of that game. So a game depends only on the seed, its
    index and the players: never on the batch size, the chunking, or the path.

Two paths, the same games
    fast     every player is a built-in bot: one numba kernel plays each game
             to its end, calling ``policies.bots.kernels.choose`` for the seat
             to move.
    generic  any players: a Python loop of `step_batch` calls over a chunk of
             games, asking each player for the games where it is to move.
    Both give identical results for built-in bots (a test holds them to it).
    Games run in chunks of `chunk`, so a progress bar can move.

Recording
    ``record=<file>`` appends every decision of entry `record_entry` to a
    JSONL record file (`policies.records`: the state, legal tokens, choice,
    with the game id ``evaluate:<seed>:<game>``), for imitation learning.
    Players are asked one decision at a time only on the generic path, so
    recording plays there (``path="fast"`` with a record is refused): the same
    games, as above.

Threads (``threads``, default 1; 0: one per core)
    Chunks are independent games, so up to `threads` Python threads play them
    at once, each its own chunk: the engine kernels release the GIL (numba
    ``nogil``) and so does torch's forward pass, so two threads keep two cores
    busy. Chunks shrink to ``ceil(games / threads)`` so each thread has one, and
    a thread gets at least `MIN_GAMES_PER_THREAD` games (fewer threads for a
    small tournament: its tails would cost more than the second core gains).
    Only players that declare ``thread_safe = True`` (built-in bots, learned
    policies, TD(λ) values, GA networks: each answers from its arguments
    alone) are played this way; any other player (a ``py:`` bot, a search or
    MCTS player) or a recording plays on one thread. The games, hence every
    number in the report, are the same for any `threads` (a test holds it).

Game length and truncation
    Game length is counted in *moves* (token moves by all seats); *plies*
    (die rolls, the engine's PLY) are reported beside it. A game still running
    after `max_plies` rolls is stopped, counted as truncated, and left out of
    wins, places and ratings.

Report (`TournamentResult.rows`, `.table()`, `.to_json()`)
    Per player: seats (entries), games, wins, win rate with its 95% Wilson
    score interval (scipy's `binomtest(...).proportion_ci(method="wilson")`),
    mean finishing place, mean game length of the games it played and of the
    games it won, and its rating. Rows are sorted by ordinal, strongest first.
    The JSON adds the rules, per-entry ratings and seat counts, and timings;
    NaN (no finished games) is written as null. Per-game arrays (`seats`,
    `places`, `moves`, `plies`, `finished`) stay on the result object: about
    40 bytes per game with the dice streams, held until the report is built.

Ratings
    openskill's Plackett-Luce model, updated once per finished game in game
    order, from the full finishing order (the engine's PLACES, so ties share a
    rank). openskill needs distinct competitors in a game, and copies of one
    spec are distinct seats, so each *entry* is rated as its own competitor
    (``random#1``, ``random#2``, ...; a spec listed once keeps its name). A
    player's row shows the mean mu and mean sigma of its entries (they all
    estimate the same skill); each entry's own rating is in the JSON.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ludo_env.engine import rng as rngmod
from ludo_env.engine.batch import reset_batch, step_batch
from ludo_env.engine.jit import kernel
from ludo_env.engine.layout import CURRENT, OVER, PLACES, PLY, PLY_MAX, STATE_DTYPE, STATE_LEN, compile_rules
from ludo_env.rules import MAX_TOKENS, Rules
from policies.league.ratings import ordinal
from policies.players import (
    DEFAULT_MOVE_TIME_LIMIT,
    BotPlayer,
    Player,
    PlayerError,
    check_choices,
    check_fits,
    make_player,
)

BOT_SEED_SALT = 0xB07_5EED_B07_5EED  # bots' streams differ from every small dice seed
DEFAULT_CHUNK = 8_192
PATHS = ("auto", "fast", "generic")
"""How a tournament plays: auto (fast when every player is a built-in bot), fast or generic."""
FAST_SLICE = 1_024
"""Games per call of the fast path's kernel within a chunk: Python sees Ctrl-C between calls, so a stop waits for
at most one slice (built-in bots: a fraction of a second on one core); each game's dice are its own, so the games
are the same for any slice."""
CONFIDENCE = 0.95


class TournamentError(ValueError):
    """A tournament argument is out of range; the message is one line for the user."""


# ------------------------------------------------------------------- seating
MIN_GAMES_PER_THREAD = 1_500
"""Fewer games than this per thread play on fewer threads. Each chunk ends in a tail of a few long games whose
steps are small torch and numba calls, and two threads then hand the GIL to each other at every call: below
this a learned policy's tournament ran slower on two threads than on one (docs/pages/results/, evaluator
speed)."""


def available_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def seating(n_players: int, games: int, first_game: int = 0) -> np.ndarray:
    """``(games, n)`` int8: the entry sitting at each seat in games ``first_game ...`` (seat 0 moves first)."""
    bases = np.array([(0, *rest) for rest in itertools.permutations(range(1, n_players))], dtype=np.int8)
    g = np.arange(first_game, first_game + games, dtype=np.int64)
    base = bases[(g // n_players) % len(bases)]
    cols = (np.arange(n_players)[None, :] + g[:, None]) % n_players
    return np.take_along_axis(base, cols, axis=1)


# ---------------------------------------------------------------- statistics
def wilson_interval(wins: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (nan, nan) when n is 0."""
    if n == 0:
        return (math.nan, math.nan)
    from scipy.stats import binomtest

    ci = binomtest(int(wins), int(n)).proportion_ci(confidence_level=confidence, method="wilson")
    return (float(ci.low), float(ci.high))


def first_entry_wins(spec: str | Player, opponent: str | Player, rules: Rules, games: int, seed: int,
                     threads: int = 1) -> np.ndarray:
    """Per game, 1.0 where entry 0 (`spec`) finished first against `opponent` at every other seat of `rules` (a
    game cut short at the ply limit counts as not won). `threads`: as `play_tournament` takes it."""
    result = play_tournament([spec] + [opponent] * (rules.players - 1), games, rules, seed, rate=False,
                             threads=threads)
    return (result.places[:, 0] == 1).astype(np.float64)


def paired_difference(wins_a: np.ndarray, wins_b: np.ndarray) -> tuple[float, float, float]:
    """A's win rate minus B's over the same games (the same dice and seats, game by game), with its 95% interval
    from the per-game differences: ``(mean, low, high)``. Shared dice correlate the two results, so this interval
    is narrower than two separate Wilson intervals, and it is the right one for "is A better on these games"."""
    d = np.asarray(wins_a, dtype=np.float64) - np.asarray(wins_b, dtype=np.float64)
    if len(d) < 2:
        raise TournamentError(f"a paired interval needs at least 2 games, got {len(d)}")
    half = 1.96 * d.std(ddof=1) / math.sqrt(len(d))
    return float(d.mean()), float(d.mean() - half), float(d.mean() + half)


def entry_labels(specs: Sequence[str]) -> list[str]:
    """Rating names of the entries: the spec, or ``spec#k`` (k from 1) for a spec listed more than once."""
    counts = {s: specs.count(s) for s in specs}
    seen: dict[str, int] = {}
    labels = []
    for s in specs:
        seen[s] = seen.get(s, 0) + 1
        labels.append(s if counts[s] == 1 else f"{s}#{seen[s]}")
    return labels


def rate_entries(places: np.ndarray, labels: Sequence[str]) -> list[tuple[float, float]]:
    """(mu, sigma) per entry after openskill Plackett-Luce updates, one per row of `places` in order."""
    from policies.league.ratings import rate_games, start_rating

    ratings = rate_games((labels, ranks) for ranks in places.tolist())
    return [ratings.get(label, start_rating()) for label in labels]


# -------------------------------------------------------------------- result
@dataclass
class PlayerRow:
    """One player's line of the report, pooled over its entries."""

    player: str
    entries: int
    games: int  # seat-games in finished games: games x entries
    wins: int
    win_rate: float
    win_rate_ci95: tuple[float, float]
    mean_place: float
    mean_moves: float  # mean length, in token moves, of the finished games it played
    mean_moves_won: float  # mean length of the games it won
    mu: float
    sigma: float
    ordinal: float


@dataclass
class TournamentResult:
    """Everything a tournament produced: per-game arrays and the per-player report (`rows`)."""

    players: list[str]
    rules: Rules
    games: int
    seed: int
    max_plies: int
    path: str
    seats: np.ndarray  # (games, n) entry at each seat
    places: np.ndarray  # (games, n) place of each entry, 0 in truncated games
    moves: np.ndarray  # (games,) token moves
    plies: np.ndarray  # (games,) die rolls
    finished: np.ndarray  # (games,) bool
    entry_ratings: list[tuple[float, float]]
    elapsed_s: float  # playing the games
    rating_s: float  # openskill updates
    rows: list[PlayerRow] = field(default_factory=list)
    threads: int = 1  # threads that played the chunks

    @property
    def truncated(self) -> int:
        return int((~self.finished).sum())

    @property
    def seat_counts(self) -> np.ndarray:
        """(n entries, n seats): games each entry played in each seat."""
        n = len(self.players)
        return np.stack([(self.seats == e).sum(axis=0) for e in range(n)])

    def to_dict(self) -> dict[str, Any]:
        labels = entry_labels(self.players)
        counts = self.seat_counts
        done = self.finished
        return {
            "players": self.players,
            "variant": self.rules.name,
            "rules": self.rules.to_dict(),
            "games": self.games,
            "seed": self.seed,
            "max_plies": self.max_plies,
            "path": self.path,
            "finished": int(done.sum()),
            "truncated": self.truncated,
            "game_length": {
                "unit": "token moves by all seats; plies are die rolls",
                "mean_moves": _mean(self.moves[done]),
                "mean_plies": _mean(self.plies[done]),
            },
            "standings": [dataclasses.asdict(row) for row in self.rows],
            "entries": [
                {
                    "entry": e,
                    "label": labels[e],
                    "player": self.players[e],
                    "mu": mu,
                    "sigma": sigma,
                    "ordinal": ordinal(mu, sigma),
                    "games_per_seat": counts[e].tolist(),
                    "moved_first": int(counts[e][0]),
                }
                for e, (mu, sigma) in enumerate(self.entry_ratings)
            ],
            "seating": "seat 0 moves first; entries rotate through the seats, all seating orders in turn",
            "rating": "openskill PlackettLuce, one update per finished game in game order; entries rated separately",
            "timing": {
                "threads": self.threads,
                "play_s": self.elapsed_s,
                "rating_s": self.rating_s,
                "games_per_s": self.games / max(self.elapsed_s + self.rating_s, 1e-9),
            },
        }

    def to_json(self) -> str:
        return json.dumps(_finite(self.to_dict()), indent=2)

    def table(self) -> str:
        """The report as aligned text: one row per player, strongest (by ordinal) first."""
        n = len(self.players)
        head = (
            f"{self.rules.name}, {n} players, {self.games:,} games, seed {self.seed}, "
            f"{self.path} path: {', '.join(self.players)}"
        )
        header = ["player", "seats", "games", "wins", "win rate", "95% CI", "place", "moves/game", "moves/win",
                  "mu", "sigma", "ordinal"]
        body = [
            [
                row.player,
                f"{row.entries}",
                f"{row.games:,}",
                f"{row.wins:,}",
                _pct(row.win_rate),
                f"[{_pct(row.win_rate_ci95[0])}, {_pct(row.win_rate_ci95[1])}]",
                f"{row.mean_place:.2f}",
                f"{row.mean_moves:.1f}",
                f"{row.mean_moves_won:.1f}",
                f"{row.mu:.2f}",
                f"{row.sigma:.2f}",
                f"{row.ordinal:.2f}",
            ]
            for row in self.rows
        ]
        widths = [max(len(r[k]) for r in [header, *body]) for k in range(len(header))]

        def line(cells: list[str]) -> str:
            return "  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(cells, widths)))

        done = self.finished
        counts = self.seat_counts
        if counts.min() == counts.max():
            seats = f"every entry sat in every seat {int(counts[0, 0]):,} times (seat 0 moves first)"
        else:
            seats = (f"{self.games:,} games is not a multiple of {n}: seat counts per entry range "
                     f"{int(counts.min()):,}..{int(counts.max()):,} (seat 0 moves first)")
        lines = [
            head,
            line(header),
            *(line(r) for r in body),
            (
                f"game length: mean {_mean(self.moves[done]):.1f} token moves, {_mean(self.plies[done]):.1f} die"
                f" rolls; truncated {self.truncated:,} of {self.games:,} (max_plies {self.max_plies:,})"
            ),
            f"seating: {seats}",
            (
                "rating: openskill Plackett-Luce from full finishing orders; a player listed more than once is"
                " rated per entry, its row shows the mean"
            ),
        ]
        return "\n".join(lines)


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.1f}%"


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else math.nan


def _finite(obj: Any) -> Any:
    """JSON has no NaN: write null instead."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def summarise(specs: list[str], places: np.ndarray, moves: np.ndarray, finished: np.ndarray,
              entry_ratings: list[tuple[float, float]]) -> list[PlayerRow]:
    """One `PlayerRow` per distinct spec, strongest (highest ordinal) first."""
    fin_places = places[finished]
    fin_moves = moves[finished]
    rows = []
    for spec in dict.fromkeys(specs):
        entries = [e for e, s in enumerate(specs) if s == spec]
        mine = fin_places[:, entries]
        n_games = int(mine.size)
        wins = int((mine == 1).sum())
        won = (mine == 1).any(axis=1)
        mu = float(np.mean([entry_ratings[e][0] for e in entries]))
        sigma = float(np.mean([entry_ratings[e][1] for e in entries]))
        rows.append(
            PlayerRow(
                player=spec,
                entries=len(entries),
                games=n_games,
                wins=wins,
                win_rate=wins / n_games if n_games else math.nan,
                win_rate_ci95=wilson_interval(wins, n_games),
                mean_place=_mean(mine),
                mean_moves=_mean(fin_moves),
                mean_moves_won=_mean(fin_moves[won]),
                mu=mu,
                sigma=sigma,
                ordinal=ordinal(mu, sigma),
            )
        )
    # Strongest first; without ratings (rate=False), by win rate.
    return sorted(rows, key=lambda r: (-r.ordinal if math.isfinite(r.ordinal) else 0.0, -r.win_rate))


# --------------------------------------------------------------------- play
@functools.cache
def _fast_kernel():
    """The all-bots kernel, built on first use so that importing this module compiles nothing.

    It calls the compiled `choose` and `step_batch` (one game at a time, through
    one-row views) instead of inlining the engine's move kernels: the same
    moves, and no second copy of the engine to compile.
    """
    from policies.bots.kernels import choose

    @kernel
    def play_bot_games(states, tab, dice, bot_rng, masks, seat_bots, max_plies, moves, illegal, choice, events):
        for b in range(states.shape[0]):
            s = states[b]
            n_moves = 0
            while s[OVER] == 0 and s[PLY] < max_plies:
                bot = seat_bots[b, s[CURRENT]]
                t = choose(bot, s, tab, masks[b], bot_rng, b)
                if t < 0 or t >= MAX_TOKENS or masks[b, t] == 0:
                    illegal[bot] += 1  # an error after the chunk, as the generic path would raise
                choice[0] = t
                step_batch(states[b : b + 1], tab, dice[b : b + 1], choice, events, masks[b : b + 1])
                n_moves += 1
            moves[b] = n_moves

    return play_bot_games


def _play_fast(players, spec_of_entry, seats, states, tab, dice, bot_rng, masks, max_plies, moves):
    bot_of_entry = np.array([players[spec_of_entry[e]].bot_id for e in range(len(spec_of_entry))], dtype=np.int64)
    seat_bots = np.zeros((states.shape[0], MAX_TOKENS), dtype=np.int64)
    seat_bots[:, : seats.shape[1]] = bot_of_entry[seats]
    illegal = np.zeros(int(bot_of_entry.max()) + 1, dtype=np.int64)
    _fast_kernel()(states, tab, dice, bot_rng, masks, seat_bots, max_plies, moves, illegal,
                   np.zeros(1, np.int64), np.zeros(1, np.int32))
    if illegal.any():
        bad = next(p.name for p in players if illegal[p.bot_id])
        raise PlayerError(f"bot '{bad}' chose an illegal token {int(illegal.sum())} times: a bug in policies.bots")


def _play_generic(players, labels, spec_of_entry, seats, states, tab, dice, bot_rng, masks, max_plies, moves,
                  record_entry=None, recorded=None):
    """Step every unfinished game of the chunk together; finished and truncated games drop out.

    With `record_entry`, each step appends (games, states, masks, choices) of that entry's decisions to `recorded`.
    """
    ids = np.arange(states.shape[0])
    w_states, w_dice, w_bot, w_masks = states.copy(), dice.copy(), bot_rng.copy(), masks.copy()
    w_moves = np.zeros(states.shape[0], dtype=np.int32)
    while True:
        live = (w_states[:, OVER] == 0) & (w_states[:, PLY] < max_plies)
        if not live.all():
            done = ~live
            states[ids[done]] = w_states[done]
            moves[ids[done]] = w_moves[done]
            ids, w_states, w_dice, w_bot = ids[live], w_states[live], w_dice[live], w_bot[live]
            w_masks, w_moves = w_masks[live], w_moves[live]
        if ids.size == 0:
            return
        player_of_row = spec_of_entry[seats[ids, w_states[:, CURRENT]]]
        choices = np.empty(ids.size, dtype=np.int64)
        for p, player in enumerate(players):
            rows = np.flatnonzero(player_of_row == p)
            if rows.size == 0:
                continue
            row_masks = w_masks[rows]
            if isinstance(player, BotPlayer):
                answer = player.act_streams(w_states[rows], tab, row_masks, w_bot, rows)
            else:
                answer = player.act(w_states[rows], tab, row_masks)  # fancy indexing: the player gets copies
            choices[rows] = check_choices(answer, row_masks, f"player '{labels[p]}'")
        if record_entry is not None:
            mine = np.flatnonzero(seats[ids, w_states[:, CURRENT]] == record_entry)
            recorded.append((ids[mine], w_states[mine].copy(), w_masks[mine].copy(), choices[mine]))
        step_batch(w_states, tab, w_dice, choices, np.empty(ids.size, dtype=np.int32), w_masks)
        w_moves += 1


def _write_records(writer, recorded: list, first_game: int, seed: int) -> None:
    """A chunk's recorded decisions, game by game in the order played."""
    if not recorded:
        return
    games = np.concatenate([r[0] for r in recorded]) + first_game
    order = np.argsort(games, kind="stable")  # steps were recorded in order, so each game's stay in order
    writer.write([f"evaluate:{seed}:{g}" for g in games[order]], np.concatenate([r[1] for r in recorded])[order],
                 np.concatenate([r[2] for r in recorded])[order], np.concatenate([r[3] for r in recorded])[order])


def _compile(players, use_fast, tab) -> None:
    """Compile the kernels a path needs on empty batches, so the progress bar and timings see only play."""
    states = np.zeros((0, STATE_LEN), dtype=STATE_DTYPE)
    masks = np.zeros((0, MAX_TOKENS), dtype=np.int8)
    streams = np.zeros(0, dtype=np.uint64)
    none = np.zeros(0, dtype=np.int64)
    reset_batch(states, tab, streams, none, masks)
    if use_fast:
        _fast_kernel()(states, tab, streams, streams, masks, np.zeros((0, MAX_TOKENS), np.int64), 1,
                       np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int32))
        return
    step_batch(states, tab, streams, none, np.zeros(0, dtype=np.int32), masks)
    for player in players:
        if isinstance(player, BotPlayer):
            player.act_streams(states, tab, masks, streams, none)


def play_tournament(
    players: Sequence[str | Player],
    games: int,
    rules: Rules | str = "classic",
    seed: int = 0,
    progress: bool = False,
    *,
    max_plies: int = 10_000,
    chunk: int = DEFAULT_CHUNK,
    path: str = "auto",
    rate: bool = True,
    record: str | Path | None = None,
    record_entry: int = 0,
    threads: int = 1,
    move_time_limit: float | None = DEFAULT_MOVE_TIME_LIMIT,
) -> TournamentResult:
    """Play `games` games between `players` (one spec or `Player` per seat) and report on them.

    `rules` is a `Rules` or a variant name; its player count becomes
    ``len(players)`` (a count the variant does not allow raises `RulesError`).
    `path` is "auto" (fast when every player is a built-in bot), "fast" or
    "generic". `rate=False` skips the openskill ratings (NaN in the report).
    `record` appends the decisions of entry `record_entry` to that record
    file (`policies.records`; played on the generic path). `threads` plays up to that many chunks at once,
    0 one per core (module docstring: Threads); the results do not depend on it. `move_time_limit`: seconds a
    ``py:`` player's ``choose`` may take per call, one batch of up to `chunk` games (`policies.players.PythonPlayer`;
    None: no limit); a slower call raises `policies.players.MoveTimeout`.
    A bad argument raises `TournamentError`, a bad spec (or a learned player trained for other rules)
    `PlayerSpecError`, a player's illegal answer `PlayerError`: all with one-line messages.
    """
    if not isinstance(games, int) or isinstance(games, bool) or games < 1:
        raise TournamentError(f"games={games!r} is not allowed: give an integer >= 1")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise TournamentError(f"seed={seed!r} is not allowed: give an integer >= 0")
    if not isinstance(max_plies, int) or not 1 <= max_plies <= PLY_MAX:
        raise TournamentError(f"max_plies={max_plies!r} is not allowed: give an integer in 1..{PLY_MAX}")
    if not isinstance(chunk, int) or chunk < 1:
        raise TournamentError(f"chunk={chunk!r} is not allowed: give an integer >= 1")
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 0:
        raise TournamentError(f"threads={threads!r} is not allowed: give an integer >= 0 (0: one per core)")
    threads = threads or available_cores()
    if path not in PATHS:
        raise TournamentError(f"path={path!r} is not allowed: choose {', '.join(PATHS[:-1])} or {PATHS[-1]}")
    n = len(players)
    if record is not None:
        if path == "fast":
            raise TournamentError("path='fast' cannot record decisions: use path='generic' or 'auto'")
        if not isinstance(record_entry, int) or not 0 <= record_entry < n:
            raise TournamentError(f"record_entry={record_entry!r} is not an entry: choose 0..{n - 1}")
    rules = Rules.load(rules, players=n) if isinstance(rules, str) else rules
    if rules.players != n:
        rules = rules.replace(players=n)
    tab = compile_rules(rules)

    specs = [p.strip() if isinstance(p, str) else getattr(p, "name", type(p).__name__) for p in players]
    distinct = list(dict.fromkeys(specs))
    built: dict[str, Player] = {}
    for p, spec in zip(players, specs):
        if spec not in built:
            built[spec] = make_player(spec, seed, move_time_limit=move_time_limit) if isinstance(p, str) else p
    player_list = [built[s] for s in distinct]
    for player in player_list:  # a learned player only in the variant and player count it was trained for
        check_fits(player, rules)
    spec_of_entry = np.array([distinct.index(s) for s in specs], dtype=np.int64)
    all_bots = all(isinstance(p, BotPlayer) for p in player_list)
    if path == "fast" and not all_bots:
        raise TournamentError("path='fast' needs every player to be a built-in bot: use path='generic' or 'auto'")
    use_fast = all_bots and path != "generic" and record is None
    writer = None
    if record is not None:
        from policies.records import RecordWriter

        writer = RecordWriter(record, rules, specs[record_entry])

    seats = seating(n, games)
    dice_all = rngmod.streams(seed, games)
    bot_all = rngmod.streams(seed ^ BOT_SEED_SALT, games)
    places = np.zeros((games, n), dtype=np.int8)
    moves = np.zeros(games, dtype=np.int32)
    plies = np.zeros(games, dtype=np.int32)
    finished = np.zeros(games, dtype=bool)

    _compile(player_list, use_fast, tab)
    from tqdm import tqdm

    workers = threads if writer is None and all(getattr(p, "thread_safe", False) for p in player_list) else 1
    workers = max(1, min(workers, games // MIN_GAMES_PER_THREAD))
    step = min(chunk, -(-games // workers))
    bar_lock = threading.Lock()

    def play_chunk(a: int, b: int) -> None:
        states = np.empty((b - a, STATE_LEN), dtype=STATE_DTYPE)
        masks = np.zeros((b - a, MAX_TOKENS), dtype=np.int8)
        dice, bot_rng = dice_all[a:b], bot_all[a:b]
        reset_batch(states, tab, dice, np.zeros(b - a, dtype=np.int64), masks)  # seat 0 moves first
        if use_fast:
            # in slices: a kernel call cannot be interrupted, and Ctrl-C must not wait for a whole chunk
            for c in range(0, b - a, FAST_SLICE):
                d = min(c + FAST_SLICE, b - a)
                _play_fast(player_list, spec_of_entry, seats[a + c:a + d], states[c:d], tab, dice[c:d],
                           bot_rng[c:d], masks[c:d], max_plies, moves[a + c:a + d])
        else:
            recorded: list = []
            _play_generic(player_list, distinct, spec_of_entry, seats[a:b], states, tab, dice, bot_rng, masks,
                          max_plies, moves[a:b], None if writer is None else record_entry, recorded)
            if writer is not None:
                _write_records(writer, recorded, a, seed)
        seat_of_entry = np.argsort(seats[a:b], axis=1)
        places[a:b] = np.take_along_axis(states[:, PLACES : PLACES + n], seat_of_entry, axis=1)
        plies[a:b] = states[:, PLY]
        finished[a:b] = states[:, OVER] == 1
        with bar_lock:
            bar.update(b - a)

    start = time.perf_counter()
    with tqdm(total=games, disable=not progress, unit="game", desc="tournament", smoothing=0.1) as bar:
        chunks = [(a, min(a + step, games)) for a in range(0, games, step)]
        if workers == 1:
            for a, b in chunks:
                play_chunk(a, b)
        else:
            pool = ThreadPoolExecutor(workers, thread_name_prefix="tournament")
            interrupted = False
            try:
                for future in [pool.submit(play_chunk, a, b) for a, b in chunks]:
                    future.result()  # in chunk order: the first error raises here
            except KeyboardInterrupt:
                interrupted = True  # Ctrl-C: the caller stops now, not after the chunks in flight
                raise
            finally:
                pool.shutdown(wait=not interrupted, cancel_futures=True)
    elapsed = time.perf_counter() - start
    places[~finished] = 0

    start = time.perf_counter()
    ratings = rate_entries(places[finished], entry_labels(specs)) if rate else [(math.nan, math.nan)] * n
    rating_s = time.perf_counter() - start
    return TournamentResult(
        players=specs,
        rules=rules,
        games=games,
        seed=seed,
        max_plies=max_plies,
        path="fast" if use_fast else "generic",
        seats=seats,
        places=places,
        moves=moves,
        plies=plies,
        finished=finished,
        entry_ratings=ratings,
        elapsed_s=elapsed,
        rating_s=rating_s,
        rows=summarise(specs, places, moves, finished, ratings),
        threads=workers,
    )
