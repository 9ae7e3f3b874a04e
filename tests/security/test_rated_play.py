"""Security 2 and 3: rated play that cannot be gamed. Anonymous browsers moved an agent's rating without limit (50
games lost on purpose, under 25 new names and 25 times as one name), anyone could play as a name someone else
had used, a person could not be removed, and an agent added as ``human:bob`` took bob's games."""
from __future__ import annotations

import sqlite3

from policies.league.store import LeagueStore
from tests.launch.test_serve import play_out
from tests.security.helpers import Person, bot_league, one_error_line, ratings, run_command, site_client


def test_a_flood_of_lost_games_moves_the_agents_no_further_than_the_limits(tmp_path):
    run = bot_league(tmp_path / "run")
    limits = {"rated_per_name": 2, "rated_per_address": 4, "new_names": 3}
    flood = site_client(tmp_path / "records", run, client="10.0.0.9", **limits)
    people = [Person(flood, f"griefer {k}") for k in range(6)]
    at_limit, rated, new_names_refused = None, 0, 0
    for person in people + [people[0]] * 6:  # six new names, then one name again and again, from one address
        answer = person.start()
        if answer.status_code == 429:
            assert "new names" in answer.json()["error"], answer.text
            new_names_refused += 1
            continue
        assert answer.status_code == 200, answer.text
        done = play_out(flood, answer.json(), choose=lambda v: min(o["token"] for o in v["legal"]))
        if done["rated"].startswith("rated in the league"):
            rated += 1
            if rated == limits["rated_per_address"]:
                at_limit = ratings(run)
        else:
            assert "in the last hour, the most" in done["rated"], done["rated"]
    assert rated == limits["rated_per_address"] and new_names_refused == 6 - limits["new_names"]
    assert ratings(run)["random"] == at_limit["random"]  # past the limits, the agent's rating did not move
    # another address cannot play as a name the flood claimed
    other = Person(site_client(tmp_path / "records", run, client="10.0.0.10"), "griefer 0").start()
    assert other.status_code == 403 and "taken" in other.json()["error"]


def test_a_claimed_name_plays_only_with_the_secret_its_first_game_gave(tmp_path):
    run = bot_league(tmp_path / "run")
    ann = site_client(tmp_path / "records", run)
    first = ann.post("/api/games", json={"variant": "quick", "players": 2, "seat": 0,
                                         "opponents": ["league:random"], "name": "ann"})
    assert first.status_code == 200 and len(first.json()["name_token"]) >= 16
    secret = first.json()["name_token"]
    with LeagueStore.open(run / "league.db", create=False, read_only=True) as store:
        stored = store.db.execute("SELECT token FROM people WHERE name = 'human:ann'").fetchone()[0]
    assert secret not in stored  # only its hash is kept
    again = ann.post("/api/games", json={"variant": "quick", "players": 2, "seat": 0,
                                         "opponents": ["league:random"], "name": "ann", "name_token": secret})
    assert again.status_code == 200 and "name_token" not in again.json()
    for wrong in ({}, {"name_token": "x" * 32}):
        answer = ann.post("/api/games", json={"variant": "quick", "players": 2, "seat": 0,
                                              "opponents": ["league:random"], "name": "ann", **wrong})
        assert answer.status_code == 403 and "taken" in answer.json()["error"]


def test_removing_a_person_takes_their_games_out_and_rates_the_rest_again(tmp_path):
    """``league.py remove human:x`` refused people ("is a training run's human"); now it removes them, and every
    rating from their first game on is computed again: an agent they played ends where it would be had they never
    played, and one game of another person's after theirs is rated again from there."""
    run = bot_league(tmp_path / "run")
    site = site_client(tmp_path / "records", run)
    before = ratings(run)
    griefer, ann = Person(site, "griefer"), Person(site, "ann")
    for _ in range(3):
        assert griefer.lose()["rated"].startswith("rated in the league")
    assert ratings(run)["random"] != before["random"]
    assert ann.lose()["rated"].startswith("rated in the league")

    done = run_command("launch/league.py", "remove", "human:griefer", f"league={run / 'league.db'}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "removed: human:griefer and their 3 rated games" in done.stdout
    after = ratings(run)
    assert "human:griefer" not in after
    # what ann's one game does from the ratings before the griefer's
    from policies.league.league import HUMAN_ROUND, rate_round
    with LeagueStore.open(run / "league.db", create=False, read_only=True) as store:
        [match] = store.matches()
        ids = {m.id: m.name for m in store.members()}
    start = {i: before.get(ids[i], (25.0, 25 / 3)) for i in match.seats}
    expected = rate_round([(match.seats, match.places)], start, HUMAN_ROUND)
    assert {ids[i]: r for i, r in expected.items()} == {name: after[name] for name in ("random", "human:ann")}
    with sqlite3.connect(run / "league.db") as db:
        assert db.execute("SELECT COUNT(*) FROM people").fetchone()[0] == 1  # ann's claim stays
        assert db.execute("SELECT COUNT(*) FROM site_games").fetchone()[0] == 1


def test_league_add_refuses_the_human_prefix_and_the_site_rates_no_agent_as_a_person(tmp_path):
    from tests.league.tiny_policy import write_tiny_policy

    policy = write_tiny_policy(tmp_path / "p4" / "policy", seed=1, players=2, variant="quick")
    run = bot_league(tmp_path / "run")
    done = run_command("launch/league.py", "add", str(policy), "name=human:bob", f"league={run / 'league.db'}",
                       "players=2", "variant=quick", "panel_games=2")
    assert "reserved for people" in one_error_line(done)
    assert "human:bob" not in ratings(run)
    # an agent that holds the name all the same (a league from before the rule): bob's games are not its games
    with sqlite3.connect(run / "league.db") as db:
        db.execute("INSERT INTO members (name, kind, spec, created_at, mu, sigma) VALUES "
                   "('human:bob', 'external', 'random', 0, 25, 8.3)")
    site = site_client(tmp_path / "records", run)
    answer = site.post("/api/games", json={"variant": "quick", "players": 2, "seat": 0,
                                           "opponents": ["league:random"], "name": "bob"})
    assert answer.status_code == 403 and "agent" in answer.json()["error"]
    assert ratings(run)["human:bob"] == (25, 8.3)
