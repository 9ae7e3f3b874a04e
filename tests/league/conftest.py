"""A small real league: bots play rated rounds of classic Ludo into a league database."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from policies.league.ratings import rate_games
from policies.league.store import LeagueStore
from policies.tournament import play_tournament

# A name a user could give an external agent: markup, quotes and an ampersand must come out as text.
ODD_NAME = "<b>ext</b> \"quoted\" & 'odd'"
ROUNDS = (  # (iteration, one spec per seat by member name)
    (10, ("bot:random", "bot:fast", "bot:hybrid", ODD_NAME)),
    (20, ("bot:hybrid", "bot:random", ODD_NAME, "bot:fast")),
    (30, ("bot:fast", "bot:hybrid", "bot:random", "bot:hybrid-2")),
)
GAMES_PER_ROUND = 24


def play_round(store: LeagueStore, iteration: int, names: tuple[str, ...]) -> int:
    """Play a round between the members named, record its finished games and rate them; how many finished."""
    members = [store.member(name) for name in names]
    result = play_tournament([m.spec for m in members], games=GAMES_PER_ROUND, rules="classic",
                             seed=iteration, rate=False)
    games = []
    for g in range(result.games):
        if not result.finished[g]:
            continue
        entries = [int(e) for e in result.seats[g]]  # entry index at each seat
        # places are per entry; the store wants them per seat, like the member ids
        games.append(([members[e].id for e in entries], [int(result.places[g, e]) for e in entries]))
    with store.transaction():
        round_id = store.add_round("training", "classic", iteration=iteration, env_steps=iteration * 4096)
        store.add_matches(round_id, "classic", games)
        before = {m.id: (m.mu, m.sigma) for m in members}
        after = rate_games(games, before)
        store.set_ratings(round_id, {m.id: after[m.id] for m in members}, iteration=iteration)
    return len(games)


def panel_of(spec: str, games: int = 40) -> dict:
    """A bot's panel entry as training stores it: greedy play against three random bots."""
    result = play_tournament([spec, "random", "random", "random"], games=games, rules="classic", seed=7,
                             rate=False)
    row = next(r for r in result.rows if r.player == spec)
    return {"random": {"win_rate": row.win_rate, "ci95": list(row.win_rate_ci95), "games": row.games}}


@pytest.fixture(scope="session")
def league_db(tmp_path_factory) -> Path:
    """A run folder holding league.db (5 members, one evicted, 3 rated rounds) and a metrics.jsonl."""
    run = tmp_path_factory.mktemp("run")
    with LeagueStore.open(run / "league.db") as store:
        for spec in ("random", "fast", "hybrid"):
            store.add_member(f"bot:{spec}", kind="bot", spec=spec)
        store.add_member(ODD_NAME, kind="external", spec="random")
        for iteration, names in ROUNDS[:2]:
            play_round(store, iteration, names)
        store.evict(store.member(ODD_NAME).id)
        # joins late, so it has one round of history and a panel evaluation
        store.add_member("bot:hybrid-2", kind="bot", spec="hybrid", iteration=30, panel=panel_of("hybrid"))
        play_round(store, *ROUNDS[2])
    metrics = [
        {"iteration": 1, "env_steps": 4096, "minutes": 0.1, "loss": 0.2},
        {"iteration": 10, "env_steps": 40960, "minutes": 0.9, "eval/win_rate_vs_random": 0.31,
         "eval/win_rate_vs_hybrid": 0.12},
        {"iteration": 20, "env_steps": 81920, "minutes": 1.8, "eval/win_rate_vs_random": 0.42,
         "eval/win_rate_vs_hybrid": 0.2},
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in metrics) + '{"iteration": 2')
    return run / "league.db"
