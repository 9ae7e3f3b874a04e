"""One bad agent fails alone: a ``py:`` external member that raises mid-run is named in one warning
line and dropped from the league, for good, and training goes on; a panel bot of the user's that raises ends the
run in one line after a checkpoint.

The bot is `tests.launch.raising_bot.RaisesLater`, a real ``py:`` bot with a bug that shows after some calls.
The league tests play real rounds in the fast evaluator; the training tests run the real script."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ludo_env.rules import Rules
from policies.league.league import League, LeagueSettings, MemberFailed
from policies.league.store import LeagueStore
from tests.launch.configs import metrics, script_env

ROOT = Path(__file__).resolve().parents[2]
BOT = "py:tests.launch.raising_bot:RaisesLater"
RULES = Rules.load("classic")
BOTS = ("random", "fast", "hybrid", "aggressive")


def open_league(folder: Path, bots=BOTS) -> League:
    settings = LeagueSettings(players=4, bots=(), rated_bots=bots, external=(BOT,), lineups=4, games_per_lineup=4,
                              with_main=False)
    return League(LeagueStore.open(folder / "league.db"), settings, "classic")


# ------------------------------------------------------------------ the league, without Ray
def test_a_member_that_raises_in_a_rating_round_is_dropped_and_the_round_replayed_without_it(tmp_path, monkeypatch):
    monkeypatch.setenv("RAISING_BOT_CALLS", "2")
    league = open_league(tmp_path)
    bot = league.store.member(BOT)
    with pytest.raises(MemberFailed, match=rf"^league member {BOT} failed: RaisesLater.choose raised "
                                           r"ZeroDivisionError: a bug at call 2$"):
        league.rating_round(RULES, seed=0, iteration=3)  # without drop_failing (launch/league.py): it raises
    assert league.store.rounds() == [] and league.store.member(BOT).active  # nothing of the failed round is kept

    result = league.rating_round(RULES, seed=0, iteration=3, drop_failing=True)
    why = "RaisesLater.choose raised ZeroDivisionError: a bug at call 3"  # the same player, asked once more
    assert [(f.member, f.reason) for f in result.dropped] == [(BOT, why)]
    assert not league.store.member(BOT).active
    matches = league.store.matches(result.round_id)
    assert matches and all(bot.id not in m.seats for m in matches)
    assert league.dropped() == {BOT: {"reason": why, "iteration": 3}}
    # a league opened again with the same settings (a resumed run) keeps it out
    reopened = open_league(tmp_path)
    assert not reopened.store.member(BOT).active and BOT in reopened.dropped()
    assert BOT not in {m.name for m in reopened.store.members(active_only=True)}
    assert reopened.matchmaker(seed=0).externals == ()


def test_a_league_too_small_without_the_failed_member_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("RAISING_BOT_CALLS", "2")
    league = open_league(tmp_path, bots=BOTS[:3])
    with pytest.raises(MemberFailed, match=r"dropped, it leaves 3 active members for the 4 seats of a rating "
                                           r"round: add league.rated_bots$"):
        league.rating_round(RULES, seed=0, drop_failing=True)
    assert not league.store.member(BOT).active


def test_a_member_that_raises_against_the_panel_is_dropped(tmp_path, monkeypatch):
    from policies.league.evaluation import evaluate_panel, panel_record

    monkeypatch.setenv("RAISING_BOT_CALLS", "2")
    league = open_league(tmp_path)
    dropped = league.fill_panels(lambda member: panel_record(
        evaluate_panel(league.player(member, guard=True), ["random"], RULES, 8, 0)), iteration=0)
    assert [f.member for f in dropped] == [BOT] and not league.store.member(BOT).active
    assert all(m.panel is not None for m in league.store.members(kinds=["bot"]))


# ------------------------------------------------------------------ training
def train(run_dir: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "launch/train.py", *args, f"hydra.run.dir={run_dir}",
                           "wandb.mode=disabled"], cwd=ROOT, capture_output=True, text=True, timeout=400,
                          env={**script_env(), **env}, check=False)


def warnings_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning: league member")]


def test_an_external_that_raises_at_a_training_seat_is_dropped_everywhere_and_training_goes_on(tmp_path):
    """A remote EnvRunner seats the bot; it raises there at its third call. The runner plays its seats with a
    stand-in, the driver drops it from league.db, every runner gets a matchmaker without it, and a resume keeps
    it out."""
    run_dir = tmp_path / "run"
    env = {"RAISING_BOT_CALLS": "3", "RAISING_BOT_WHERE": "ray_worker"}
    done = train(run_dir, "+exp=smoke", "budget.iterations=3", "resources.env_runners=1",
                 f"league.external=[{BOT}]", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert warnings_of(done.stderr) == [
        (f"warning: league member {BOT} failed at a training seat and is dropped from the league (training goes "
         "on): RaisesLater.choose raised ZeroDivisionError: a bug at call 3")]
    assert "Traceback" not in done.stderr
    rows = metrics(run_dir)
    assert [row["iteration"] for row in rows] == [1, 2, 3]
    # it trains: today's code restarts the runner after every failure and samples nothing (0 steps, no loss)
    assert 0 < rows[0]["env_steps"] < rows[1]["env_steps"] < rows[2]["env_steps"], rows
    assert all(row["loss"] is not None for row in rows)
    assert json.loads((run_dir / "summary.json").read_text())["iterations"] == 3
    with LeagueStore.open(run_dir, create=False, read_only=True) as store:
        member = store.member(BOT)
        assert not member.active
        assert json.loads(store.get_meta(f"dropped:{BOT}"))["reason"].startswith("RaisesLater.choose raised")
        later_rounds = [r["id"] for r in store.rounds() if (r["iteration"] or 0) > json.loads(
            store.get_meta(f"dropped:{BOT}"))["iteration"]]
        assert later_rounds and all(member.id not in m.seats for r in later_rounds for m in store.matches(r))

    # a resume takes a py: bot only from its own command line
    resumed = train(run_dir, f"resume={run_dir}", f"league.external=[{BOT}]", "budget.iterations=4", env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"note: league member {BOT} stays out of the league: dropped at iteration" in resumed.stderr
    assert warnings_of(resumed.stderr) == []
    with LeagueStore.open(run_dir, create=False, read_only=True) as store:
        assert not store.member(BOT).active


@pytest.mark.slow  # the drop itself: test_a_member_that_raises_against_the_panel_is_dropped, without Ray
def test_an_external_that_raises_before_training_is_dropped_before_ray_starts(tmp_path):
    run_dir = tmp_path / "run"
    done = train(run_dir, "+exp=smoke", "budget.iterations=1", f"league.external=[{BOT}]",
                 env={"RAISING_BOT_CALLS": "2", "RAISING_BOT_WHERE": "driver"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert warnings_of(done.stderr) == [
        (f"warning: league member {BOT} failed against the panel and is dropped from the league (training goes "
         "on): RaisesLater.choose raised ZeroDivisionError: a bug at call 2")]
    with LeagueStore.open(run_dir, create=False, read_only=True) as store:
        assert not store.member(BOT).active and store.member(BOT).panel is None


def test_a_panel_bot_that_raises_ends_the_run_in_one_line_after_a_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    # it raises only when asked for more than eval.games=40 games at once: in the final evaluation (80)
    done = train(run_dir, "+exp=smoke", f"eval.panel=[random,{BOT}]",
                 env={"RAISING_BOT_CALLS": "1", "RAISING_BOT_WHERE": "batch>=41"})
    assert done.returncode == 2, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last == (f"error: eval.panel: RaisesLater.choose raised ZeroDivisionError: a bug at call 1; the run "
                    f"stopped at iteration 2 after saving {run_dir / 'checkpoints' / 'iter_000002'} (resume with: "
                    f"python launch/train.py resume={run_dir} {shlex.quote(f'eval.panel=[random,{BOT}]')})"), done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert (run_dir / "checkpoints" / "iter_000002" / "policy" / "weights.pt").is_file()
