"""A learned player plays only the variant and player count it was trained for (its policy.json says which):
evaluate.py, play.py, the league, the server and training refuse it in one line. And training checks every
player spec and size before Ray starts and before a run folder exists."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.league.tiny_policy import write_tiny_policy

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def four_player(tmp_path_factory) -> Path:
    """A classic policy trained (as its policy.json says) for 4 players."""
    return write_tiny_policy(tmp_path_factory.mktemp("four") / "policy", players=4)


def run(script: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, f"launch/{script}", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False, input=stdin)


def assert_one_line(done: subprocess.CompletedProcess, words: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: "), done.stderr[-2000:]
    assert words in done.stderr, done.stderr


MISFIT = "was trained for 4-player classic, this game is 2-player classic"


# ------------------------------------------------------------------ a 4-player policy in a 2-player game
def test_evaluate_refuses_a_policy_trained_for_another_player_count(tmp_path, four_player):
    out = tmp_path / "report.json"
    done = run("evaluate.py", f"players=[ckpt:{four_player},random]", "games=2", "progress=false", f"out={out}",
               f"hydra.run.dir={tmp_path}")
    assert_one_line(done, MISFIT)
    assert not out.exists()


def test_evaluate_refuses_a_policy_trained_for_another_variant(tmp_path, four_player):
    done = run("evaluate.py", f"players=[ckpt:{four_player},random,random,random]", "games=4", "variant=quick",
               "progress=false", f"hydra.run.dir={tmp_path}")
    assert_one_line(done, "was trained for 4-player classic, this game is 4-player quick")


def test_play_refuses_a_policy_trained_for_another_player_count(four_player):
    done = run("play.py", f"opponents=[ckpt:{four_player}]", "record=null")
    assert_one_line(done, MISFIT)


def test_a_fitting_policy_still_plays(tmp_path, four_player):
    from ludo_env.rules import Rules
    from policies.tournament import play_tournament

    result = play_tournament([f"ckpt:{four_player}", "random", "random", "random"], 4, Rules.load("classic"), 0,
                             progress=False)
    assert result.games == 4


def test_the_league_and_the_server_refuse_it_too(tmp_path, four_player):
    from fastapi.testclient import TestClient

    from launch.web.app import create_app
    from launch.web.site import Site
    from ludo_env.rules import Rules
    from policies.league.evaluation import evaluate_panel
    from policies.players import PlayerSpecError, make_player

    with pytest.raises(PlayerSpecError, match=MISFIT):  # league rating rounds and panels play through this
        evaluate_panel(make_player(f"ckpt:{four_player}"), ["random"], Rules.load("classic", players=2), 2, 0)
    site = Site(tmp_path, [f"ckpt:{four_player}"])
    site.load_agents()
    answer = TestClient(create_app(site)).post("/api/games", json={"variant": "classic", "players": 2, "seat": 0,
                                                                   "opponents": ["agent:0"]})
    assert answer.status_code == 422 and MISFIT in answer.json()["error"]


def test_a_gym_env_refuses_it_as_an_opponent(four_player):
    from policies.envs import make_env
    from policies.players import PlayerSpecError, make_player

    with pytest.raises(PlayerSpecError, match=MISFIT):
        make_env(variant="classic", opponents=[f"ckpt:{four_player}"])
    with pytest.raises(PlayerSpecError, match=MISFIT):  # a player built beforehand is checked too
        make_env(variant="classic", opponents=[make_player(f"ckpt:{four_player}")])


# ------------------------------------------------------------------ training: refused before Ray and the run folder
@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> Path:
    policy = write_tiny_policy(tmp_path_factory.mktemp("damaged") / "policy")
    weights = policy / "weights.pt"
    weights.write_bytes(weights.read_bytes()[:100])  # truncated
    return policy


@pytest.mark.parametrize("override,words", [
    ("eval.panel=[nope]", "eval.panel: unknown player 'nope'"),
    ("eval.panel=[py:missing:Bot]", "eval.panel: player 'py:missing:Bot': cannot import module 'missing'"),
    ("league.external=[DAMAGED]", "league.external: player 'ckpt:"),
    ("eval.panel=[ckpt:FOUR]", "eval.panel: player 'ckpt:"),
    ("algo.minibatch_size=100000", "algo.minibatch_size=100000 is not allowed: give a number in [1, "),
])
def test_train_checks_players_and_sizes_before_ray_and_leaves_no_run_folder(tmp_path, damaged, four_player,
                                                                            override, words):
    override = override.replace("DAMAGED", str(damaged)).replace("FOUR", str(four_player))
    run_dir = tmp_path / "run"
    players = ["variant.players=2"] if "FOUR" in override or str(four_player) in override else []
    done = run("train.py", "+exp=smoke", *players, override, f"hydra.run.dir={run_dir}", "wandb.mode=disabled")
    assert_one_line(done, words)
    if str(damaged) in override:
        assert "weights.pt' is damaged" in done.stderr
    if str(four_player) in override:
        assert MISFIT in done.stderr
    assert "Ray" not in done.stdout + done.stderr  # refused before ray.init
    assert not run_dir.exists(), "a refused run leaves no run folder"
