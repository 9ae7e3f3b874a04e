"""``champion:<variant>`` (policies.champions): one registry, played by name wherever a player spec goes (evaluate,
play, league externals, training's league, serve's agents), offered by the site for games of its rule set, and
refused in one line for a rule set without one or for a game of another rule set."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from launch.cli import UserError
from launch.web.app import create_app
from launch.web.site import Site
from ludo_env.rules import Rules
from policies import champions
from policies.champions import CHAMPIONS, SHIPPED_POLICIES, ChampionError, champion_folder, champion_specs
from policies.players import PlayerSpecError, check_fits, make_player
from policies.tournament import play_tournament

ROOT = Path(__file__).resolve().parents[2]
MISFIT = ("player 'champion:classic' was trained for 4-player classic, this game is 4-player pyludo: give a policy "
          "trained for 4-player pyludo")


def test_the_registry_names_shipped_policy_folders():
    assert champion_specs() == [f"champion:{variant}" for variant in CHAMPIONS]
    assert champion_folder("champion:classic") == SHIPPED_POLICIES / "ppo_classic_board"
    for variant in CHAMPIONS:  # each champion was trained for its own rule set
        assert make_player(f"champion:{variant}").trained_for[0] == variant


def test_a_champion_plays_as_its_policy_folder_under_its_own_name():
    champion = make_player("champion:classic")
    folder = make_player(f"ckpt:{SHIPPED_POLICIES / 'ppo_classic_board'}")
    assert champion.name == "champion:classic" and champion.trained_for == ("classic", 4)
    result = play_tournament(["champion:classic", "random", "random", "random"], 40, "classic", seed=3, rate=False)
    again = play_tournament([folder, "random", "random", "random"], 40, "classic", seed=3, rate=False)
    assert result.rows[0].player == "champion:classic" or result.rows[1].player == "champion:classic"
    assert np.array_equal(result.places, again.places)


@pytest.mark.parametrize("spec", ["champion:quick", "champion:", "champion:../ppo_classic"])
def test_a_rule_set_without_a_champion_is_one_line_listing_those_there_are(spec):
    with pytest.raises(PlayerSpecError) as err:
        make_player(spec)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"player '{spec}': there is no champion for ")
    assert message.endswith(f"the champions are {', '.join(champion_specs())}")


def test_a_champion_in_a_game_of_another_rule_set_is_refused_as_any_policy_is():
    with pytest.raises(PlayerSpecError, match=MISFIT):
        make_player("champion:classic", rules=Rules.load("pyludo"))
    with pytest.raises(PlayerSpecError, match=MISFIT):
        check_fits(make_player("champion:classic"), Rules.load("pyludo"))
    with pytest.raises(PlayerSpecError, match="was trained for 4-player classic, this game is 2-player classic"):
        play_tournament(["champion:classic", "random"], 4, "classic", seed=0)


def test_a_champion_missing_from_this_install_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(champions, "SHIPPED_POLICIES", tmp_path)
    with pytest.raises(ChampionError, match="the champion of classic should be at '.*', which this install does not "
                                            "have"):
        champion_folder("champion:classic")
    assert champions.shipped_champions() == {}
    assert Site(tmp_path / "records").champions == []  # nothing offered that could not play


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, check=False)


def test_evaluate_plays_a_champion_and_refuses_one_line_for_the_wrong_rules_or_an_unknown_one(tmp_path):
    done = run("launch/evaluate.py", "players=[champion:classic,hybrid,hybrid,hybrid]", "games=40",
               f"hydra.run.dir={tmp_path / 'ok'}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "champion:classic" in done.stdout
    for players, variant, words in (("champion:classic", "pyludo", MISFIT),
                                    ("champion:nosuch", "classic", ("there is no champion for 'nosuch': the champions "
                                                                    "are champion:classic, champion:pyludo"))):
        done = run("launch/evaluate.py", f"players=[{players},hybrid,hybrid,hybrid]", "games=40",
                   f"variant={variant}", f"hydra.run.dir={tmp_path / variant}")
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], done.stderr[-2000:]


def test_play_takes_a_champion_as_an_opponent():
    from launch.play import make_table, parse_args

    table = make_table(parse_args(["opponents=[champion:classic,hybrid,hybrid]", "variant=classic", "seed=1"]))
    assert table.opponents[1].name == "champion:classic"
    with pytest.raises(UserError, match=MISFIT):
        make_table(parse_args(["opponents=[champion:classic,hybrid,hybrid]", "variant=pyludo"]))


def test_a_champion_joins_a_league_as_an_external_member_by_its_name(tmp_path):
    from policies.league.league import League, LeagueSettings
    from policies.league.store import LeagueStore

    league = League(LeagueStore.open(tmp_path / "league.db"), LeagueSettings(players=4, with_main=False), "classic")
    member = league.add_external("champion:classic")
    assert (member.name, member.spec) == ("champion:classic", "champion:classic")
    assert league.add_external("champion:classic").id == member.id
    assert league.player(member).name == "champion:classic"
    with pytest.raises(PlayerSpecError, match="there is no champion for 'quick'"):
        league.add_external("champion:quick")


def test_league_command_adds_a_champion(tmp_path):
    done = run("launch/league.py", "add", "champion:classic", f"league={tmp_path}", "variant=classic")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "champion:classic" in done.stdout
    done = run("launch/league.py", "add", "champion:classic", f"league={tmp_path / 'p'}", "variant=pyludo")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "trained for 4-player classic" in lines[0], done.stderr


@pytest.mark.parametrize("variant,words", [
    ("pyludo", ("league.external: player 'champion:classic' was trained for 4-player classic, this game is 4-player "
                "pyludo")),
    ("classic", "league.external: player 'champion:ludo': there is no champion for 'ludo'"),
])
def test_training_refuses_a_champion_it_cannot_seat_in_one_line_before_a_run_folder(tmp_path, variant, words):
    champion = "champion:classic" if variant == "pyludo" else "champion:ludo"
    done = run("launch/train.py", "+exp=smoke", f"variant={variant}", f"league.external=[{champion}]",
               f"hydra.run.dir={tmp_path / 'run'}", "wandb.mode=disabled")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and words in lines[0], done.stderr[-2000:]
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_training_seats_a_champion_as_an_external_member(tmp_path):
    from policies.league.store import LeagueStore

    run_dir = tmp_path / "run"
    done = run("launch/train.py", "+exp=smoke", "budget.iterations=1", "league.external=[champion:classic]",
               "eval.final_games=0", f"hydra.run.dir={run_dir}", "wandb.mode=disabled")
    assert done.returncode == 0, done.stderr[-3000:]
    with LeagueStore.open(run_dir / "league.db", create=False, read_only=True) as store:
        [member] = store.members(kinds=["external"])
    assert (member.name, member.spec, member.active) == ("champion:classic", "champion:classic", 1)


# ------------------------------------------------------------------ the site
def test_the_site_offers_each_champion_for_games_of_its_rule_set_only(tmp_path):
    client = TestClient(create_app(Site(tmp_path / "records", [])))
    offered = {o["id"]: o for o in client.get("/api/options").json()["opponents"]}
    assert offered["champion:classic"] == {"id": "champion:classic", "label": "champion (classic)",
                                           "kind": "champion", "variant": "classic", "players": 4}
    assert "variant" not in offered["bot:hybrid"]  # a seed bot plays any game
    assert str(SHIPPED_POLICIES) not in client.get("/api/options").text
    view = client.post("/api/games", json={"variant": "classic", "players": 4, "seat": 0,
                                           "opponents": ["champion:classic", "bot:random", "bot:random"]}).json()
    assert view["turn"] in ("roll", "move")
    for _ in range(2000):  # until the champion has moved: the server's dice may keep it in base for a while
        game = view["id"]
        if view["turn"] == "opponent":
            view = client.post(f"/api/games/{game}/step").json()
        elif view["turn"] == "roll":
            view = client.post(f"/api/games/{game}/roll").json()
        else:
            view = client.post(f"/api/games/{game}/move", json={"token": view["legal"][0]["token"]}).json()
        if any(e["seat"] == 1 and e["token"] is not None for e in view["log"]):
            break
    assert any(e["seat"] == 1 and e["token"] is not None for e in view["log"])
    refused = client.post("/api/games", json={"variant": "pyludo", "players": 4, "seat": 0,
                                              "opponents": ["champion:classic", "bot:random", "bot:random"]})
    assert refused.status_code == 422 and "\n" not in refused.text
    assert "cannot play this game" in refused.json()["error"] and "trained for 4-player classic" in \
        refused.json()["error"]


def test_serve_takes_a_champion_as_an_agent_and_refuses_an_unknown_one_in_one_line(tmp_path):
    from launch.serve import build_site, parse

    site = build_site(parse(["agents=[champion:classic]", f"records={tmp_path / 'one'}"]))
    assert [a.spec for a in site.agents] == ["champion:classic"]
    with pytest.raises(UserError, match="player 'champion:nosuch': there is no champion for 'nosuch'"):
        build_site(parse(["agents=[champion:nosuch]", f"records={tmp_path / 'two'}"]))
