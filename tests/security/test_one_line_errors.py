"""Lost, wrong or unclear ends of the commands, each now one line: a run written into a folder of other files, an
empty ``resume=``, ratings no round writes in league.db, a closed stdout, a record giving its player count twice,
JSON nested a hundred thousand deep, a rule out of its range, Ctrl-C in export and the engine benchmark, a spec
option given twice, another Python, and a key Hydra's lexer cannot read."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from policies.league.store import DamagedMemberError, LeagueStore
from tests.security.helpers import ROOT, bot_league, one_error_line, run_command, site_client
from tests.security.test_records_are_data import record_line

DEEP = "[" * 100_000 + "]" * 100_000


# ------------------------------------------------------------------ where a run writes
def test_a_run_into_a_folder_of_other_files_is_refused_and_the_folder_untouched(tmp_path):
    folder = tmp_path / "etc"
    folder.mkdir()
    (folder / "passwd").write_text("root:x:0:0\n")
    for key in ("hydra.run.dir", "run_dir"):
        line = one_error_line(run_command("launch/train.py", "+exp=smoke", f"{key}={folder}", timeout=180))
        assert f"{key}={folder}: the folder holds other files" in line and "'passwd'" in line
        assert sorted(p.name for p in folder.iterdir()) == ["passwd"]


def test_an_empty_resume_is_refused_instead_of_starting_a_new_run(tmp_path):
    line = one_error_line(run_command("launch/train.py", "+exp=smoke", "resume=",
                                      f"hydra.run.dir={tmp_path / 'run'}", timeout=180))
    assert line.startswith("error: resume= needs a run folder")
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------ what league.db holds
DAMAGES = pytest.mark.parametrize("change, says", [
    (f"UPDATE members SET {change} WHERE name = 'hybrid'", f"league member 'hybrid' has {problem}")
    for change, problem in [
        ("mu = 9e999", "mu = inf, not a finite number"), ("sigma = -5", "sigma = -5.0, not above 0"),
        ("sigma = 0", "sigma = 0.0, not above 0"), ("mu = 'abc'", "mu = 'abc', not a finite number")]
], ids=["mu-inf", "sigma-negative", "sigma-zero", "mu-text"])


def damaged_league(run, change: str):
    """`bot_league` with one member row changed by `change`, the SQL a hand or another program could run."""
    bot_league(run)
    with sqlite3.connect(run / "league.db") as db:
        db.execute(change)
    return run


def quiet(stderr: str) -> list[str]:
    """The lines a command wrote to stderr, less the deprecation notes of the installed libraries."""
    return [line for line in stderr.splitlines() if "Deprecat" not in line and "from starlette" not in line]


@DAMAGES
def test_a_rating_no_league_writes_is_one_warning_and_never_shown_as_a_rating(tmp_path, change, says):
    run = damaged_league(tmp_path / "run", change)
    done = run_command("launch/league.py", "show", f"league={run / 'league.db'}", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    [warning] = quiet(done.stderr)
    assert warning.startswith("warning: ") and says in warning and "left out" in warning
    rows = {line.split()[1]: line for line in done.stdout.splitlines()[1:-1]}
    assert set(rows) == {"random", "hybrid"}  # the other member is read and shown
    assert "25.00   8.33" in rows["random"]
    assert "damaged: " + says.split(" has ")[1] in rows["hybrid"] and "no rating is shown" in rows["hybrid"]
    assert rows["hybrid"].split("damaged:")[0].split() == ["-", "hybrid", "bot", "-"]  # no rating column


def test_a_schema_version_no_league_writes_is_one_line(tmp_path):
    run = damaged_league(tmp_path / "run", "UPDATE meta SET value = '-1' WHERE key = 'schema_version'")
    done = run_command("launch/league.py", "show", f"league={run / 'league.db'}", timeout=120)
    assert "its schema_version is -1: schemas are numbered" in one_error_line(done)
    assert done.stdout == ""


@DAMAGES
def test_a_damaged_member_is_one_line_when_asked_for_and_left_out_of_the_members(tmp_path, capsys, change, says):
    run = damaged_league(tmp_path / "run", change)
    with LeagueStore.open(run, create=False, read_only=True) as store:
        assert [m.name for m in store.members()] == ["random"]
        assert [m.name for m in store.members()] == ["random"]
        [damaged] = store.damaged_members()
        assert (damaged.name, damaged.kind) == ("hybrid", "bot") and damaged.problem == says.split(" has ")[1]
        with pytest.raises(DamagedMemberError, match=says) as raised:
            store.member("hybrid")
        assert "\n" not in str(raised.value) and raised.value.damaged == damaged
    assert capsys.readouterr().err.count(says) == 1  # one warning, however often the members are read


def test_a_damaged_member_is_removed_by_league_remove_and_the_others_stay(tmp_path):
    run = damaged_league(tmp_path / "run", "UPDATE members SET sigma = -5 WHERE name = 'hybrid'")
    done = run_command("launch/league.py", "remove", "hybrid", f"league={run / 'league.db'}", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[0] == "removed: hybrid"
    with LeagueStore.open(run, create=False, read_only=True) as store:
        assert [m.name for m in store.members()] == ["random"] and store.damaged_members() == []


def test_a_damaged_member_is_not_offered_by_the_site_and_the_others_are(tmp_path):
    run = damaged_league(tmp_path / "run", "UPDATE members SET mu = 'abc' WHERE name = 'hybrid'")
    answer = site_client(tmp_path / "records", run).get("/api/options")
    assert answer.status_code == 200
    assert {o["id"] for o in answer.json()["opponents"] if o["kind"] == "league"} == {"league:random"}


def test_a_league_round_is_played_without_a_damaged_member_with_a_warning(tmp_path):
    run = damaged_league(tmp_path / "run", "UPDATE members SET mu = 9e999 WHERE name = 'hybrid'")
    done = run_command("launch/league.py", "play", "games=4", "players=2", "variant=quick",
                       "bots=[random,hybrid,fast]", f"league={run / 'league.db'}", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    warnings = [line for line in quiet(done.stderr) if line.startswith("warning: ")]
    assert len(warnings) == 1 and "league member 'hybrid' has mu = inf" in warnings[0]
    with LeagueStore.open(run, create=False, read_only=True) as store:
        seated = {member_id for match in store.matches() for member_id in match.seats}
        assert seated == {store.member("random").id, store.member("fast").id}
        assert [d.name for d in store.damaged_members()] == ["hybrid"]  # left as it was, never rated


def test_rating_again_leaves_out_a_damaged_members_games_with_a_warning(tmp_path, capsys):
    from policies.league.league import HUMAN_ROUND, remove_person

    run = bot_league(tmp_path / "run")
    with LeagueStore.open(run) as store:
        alice = store.add_member("human:alice", kind="human", spec="human")
        random_, hybrid = store.member("random"), store.member("hybrid")
        for seats in ((alice.id, random_.id), (random_.id, hybrid.id)):
            round_id = store.add_round(HUMAN_ROUND, "quick")
            store.add_matches(round_id, "quick", [(seats, (1, 2))])
            store.set_ratings(round_id, {seats[0]: (27.0, 8.0), seats[1]: (23.0, 8.0)})
    with sqlite3.connect(run / "league.db") as db:
        db.execute("UPDATE members SET sigma = 0 WHERE name = 'hybrid'")
    with LeagueStore.open(run) as store:
        assert remove_person(store, store.member("human:alice")) == 1
        assert store.member("random").mu == pytest.approx(25.0)  # as if alice never played; hybrid's game not rated
        assert [d.name for d in store.damaged_members()] == ["hybrid"]
    err = capsys.readouterr().err
    assert "league member 'hybrid' has sigma = 0.0, not above 0: its 1 rated games are left out" in err


def test_a_bad_rating_in_the_history_is_left_out_with_a_warning_never_read_as_one(tmp_path, capsys):
    run = bot_league(tmp_path / "run")
    with LeagueStore.open(run) as store:
        store.set_ratings(None, {store.member("hybrid").id: (26.0, 7.0), store.member("random").id: (24.0, 7.0)})
    with sqlite3.connect(run / "league.db") as db:
        db.execute("UPDATE ratings SET sigma = -1 WHERE member_id = 2")
    with LeagueStore.open(run, create=False, read_only=True) as store:
        assert [(row["name"], row["mu"]) for row in store.rating_history()] == [("random", 24.0)]
    [warning] = capsys.readouterr().err.splitlines()
    assert "a rating of league member 'hybrid' in its history has sigma = -1.0, not above 0" in warning


def test_a_match_nested_100000_deep_in_league_db_is_one_line(tmp_path):
    run = bot_league(tmp_path / "run")
    with LeagueStore.open(run) as store:
        ids = [m.id for m in store.members()]
        store.add_matches(store.add_round("test", "classic"), "classic", [(ids, [1, 2])])
    with sqlite3.connect(run / "league.db") as db:
        db.execute("UPDATE matches SET seats = ?", (DEEP,))
    line = one_error_line(run_command("launch/league.py", "show", f"league={run / 'league.db'}", timeout=120))
    assert "match 1 has seats = '[[[[" in line and "not a JSON list of integers" in line


def test_a_metrics_line_nested_100000_deep_is_left_out_with_a_warning(tmp_path, capsys):
    from launch.cli import read_jsonl

    path = tmp_path / "metrics.jsonl"
    path.write_text('{"a": 1}\n{"b": ' + DEEP + '}\n{"c": 2}\n')
    assert read_jsonl(path) == [{"a": 1}, {"c": 2}]
    assert capsys.readouterr().err == f"warning: {path}:2: JSON nested deeper than 64 levels: this row is left out\n"


# ------------------------------------------------------------------ a run folder's JSON
def deep_checkpoint(run, name: str, text: str):
    """A checkpoint folder of `run` whose file `name` holds `text`, with what a resume looks for besides."""
    checkpoint = run / "checkpoints" / "iter_000001"
    (checkpoint / "algorithm").mkdir(parents=True)
    (checkpoint / "algorithm" / "rllib_checkpoint.json").write_text(json.dumps({"type": "Algorithm"}))
    (checkpoint / name).write_text(text)
    return checkpoint


def test_a_run_state_nested_100000_deep_is_a_damaged_checkpoint_in_one_line(tmp_path):
    from launch.cli import UserError
    from launch.training.runs import RUN_STATE, RunDir

    run = tmp_path / "run"
    deep_checkpoint(run, RUN_STATE, '{"iteration": ' + DEEP + "}")
    with pytest.raises(UserError) as refused:
        RunDir(run).resume_point(str(run), lambda checkpoint, state: None)
    assert str(refused.value) == (f"resume={run}: no checkpoint loads: iter_000001 is damaged (JSON nested deeper "
                                  "than 64 levels)")


def test_a_signature_nested_100000_deep_is_an_unreadable_signature_in_one_line(tmp_path, monkeypatch):
    from launch.training.runs import KEY_ENV, SIGNATURE, CheckpointNotTrusted, RunDir

    key = tmp_path / "key"
    key.write_text("cd" * 32 + "\n")
    key.chmod(0o600)
    monkeypatch.setenv(KEY_ENV, str(key))
    checkpoint = deep_checkpoint(tmp_path / "run", SIGNATURE, '{"files": ' + DEEP + "}")
    with pytest.raises(CheckpointNotTrusted, match=f"its {SIGNATURE} is unreadable") as refused:
        RunDir(tmp_path / "run").check_algorithm_state(checkpoint)
    assert "\n" not in str(refused.value)


# ------------------------------------------------------------------ stdout closed
def test_a_closed_stdout_is_one_line_and_no_work(tmp_path):
    done = run_command("launch/evaluate.py", "players=[random,random]", "variant=quick", "games=4",
                       f"hydra.run.dir={tmp_path / 'run'}", preexec_fn=lambda: os.close(1), timeout=120)
    assert "stdout is closed" in one_error_line(done)
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------ records and policy files
def test_a_record_giving_players_in_its_rules_and_beside_them_is_one_line(tmp_path):
    from policies.records import RecordError, load_decisions

    path = tmp_path / "twice.jsonl"
    path.write_text(record_line("classic", {"players": 4}))
    with pytest.raises(RecordError, match="players is given twice"):
        load_decisions([path])


def test_a_record_nested_100000_deep_is_one_line(tmp_path):
    from policies.records import RecordError, read_records

    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps({"format": "x"})[:-1] + f', "rules": {DEEP}}}\n')
    with pytest.raises(RecordError, match="nested deeper than 64 levels"):
        read_records(path)


def test_a_policy_json_nested_100000_deep_is_one_line(tmp_path):
    policy = tmp_path / "policy"
    policy.mkdir()
    (policy / "policy.json").write_text('{"format": "ludo-league-policy/1", "kind": ' + DEEP + "}")
    line = one_error_line(run_command("launch/evaluate.py", f"players=[ckpt:{policy},random]", "variant=quick",
                                      "games=2", f"hydra.run.dir={tmp_path / 'run'}", timeout=120))
    assert "policy.json' is unreadable: JSON nested deeper than 64 levels" in line


@pytest.mark.parametrize("script, args", [("evaluate.py", ["games=4", "hydra.run.dir={tmp}/run"]), ("play.py", [])])
def test_a_rule_past_its_range_on_the_command_line_is_one_line_naming_the_range(tmp_path, script, args):
    line = one_error_line(run_command(f"launch/{script}", "variant.sixes_forfeit=1000000000000",
                                      *(a.format(tmp=tmp_path) for a in args), timeout=120))
    assert "sixes_forfeit=1000000000000 is not allowed" in line and "2..100" in line


def test_a_record_with_a_rule_past_its_range_is_listed_as_damaged(tmp_path):
    records = tmp_path / "records"
    records.mkdir()
    (records / "huge.jsonl").write_text(record_line("classic", {"sixes_forfeit": 10**12}))
    answer = site_client(records).get("/api/records")
    assert answer.status_code == 200
    [entry] = [e for e in answer.json()["records"] if e["file"] == "records/huge.jsonl"]
    assert "sixes_forfeit=1000000000000 is not allowed" in entry["error"], entry


# ------------------------------------------------------------------ Ctrl-C
def interrupted(args: list[str], ready, settle: float = 1.0, path: tuple[Path, ...] = ()) -> subprocess.CompletedProcess:
    """``python <args>`` sent SIGINT `settle` seconds after ``ready()`` holds (inside its work, past its imports);
    `path` goes on the import path after the checkout."""
    pythonpath = os.pathsep.join([str(ROOT), *map(str, path)])
    proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONPATH": pythonpath})
    try:
        deadline = time.monotonic() + 300
        while not ready() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(settle)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return subprocess.CompletedProcess(args, proc.returncode, "", err)


def test_ctrl_c_during_the_check_of_an_export_is_one_line_and_writes_nothing(tmp_path):
    from tests.league.tiny_policy import write_tiny_policy

    policy = write_tiny_policy(tmp_path / "p" / "policy", seed=1)
    out = tmp_path / "out"
    out.mkdir()
    # the model is written into a temporary folder beside out, then checked there: interrupted while it is
    done = interrupted(["launch/export.py", f"ckpt={policy}", f"out={out / 'agent.pt'}", "check=10000000"],
                       ready=lambda: any((out / name).is_dir() for name in os.listdir(out)), settle=2.0)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 130 and lines[-1] == "interrupted: export stopped, nothing written", done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert list(out.iterdir()) == []  # no model, no temporary folder


def test_ctrl_c_in_the_engine_benchmark_is_one_line(tmp_path):
    # ludopy (the bench extra) is not among the test dependencies, and what is checked is this script's Ctrl-C,
    # not the peer: a stand-in `ludopy` that marks when the benchmark first calls it and then waits, so Ctrl-C
    # lands inside the benchmark's work, after our side has compiled and played.
    stand_in = tmp_path / "peer"
    (stand_in / "ludopy").mkdir(parents=True)
    entered = tmp_path / "entered"
    (stand_in / "ludopy" / "__init__.py").write_text(
        "import pathlib, time\n"
        "class Game:\n"
        "    def __init__(self):\n"
        f"        pathlib.Path({str(entered)!r}).touch()\n"
        "        time.sleep(600)\n")
    done = interrupted(["benchmarks/engine.py", "--repeats", "1"], ready=entered.exists, settle=0.5,
                       path=(stand_in,))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 130 and lines[-1].startswith("interrupted: "), done.stderr[-3000:]
    assert "Traceback" not in done.stderr


# ------------------------------------------------------------------ specs, Python, keys
@pytest.mark.parametrize("spec", ["mcts:/no/policy?sims=64&sims=8", "search:/no/policy?depth=2&depth=1",
                                  "rollout:random?n=4&n=8"])
def test_a_spec_option_given_twice_is_refused(spec):
    from policies.players import PlayerSpecError, make_player

    with pytest.raises(PlayerSpecError, match="is given twice"):
        make_player(spec)


def test_another_python_is_told_its_version_in_one_line():
    from tests.test_lock import other_python

    python = other_python()
    if python is None:
        pytest.skip("no Python other than 3.11 here")
    done = subprocess.run([python, "launch/evaluate.py", "games=1"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    line = one_error_line(done, status=1)
    assert "runs on Python 3.11" in line and "this is Python 3." in line


@pytest.mark.parametrize("command", [["launch/evaluate.py"], ["launch/train.py"], ["launch/league.py", "show"],
                                     ["launch/serve.py"]], ids=["evaluate", "train", "league", "serve"])
def test_a_key_hydra_cannot_spell_is_an_unknown_option_naming_the_allowed(command):
    line = one_error_line(run_command(*command, "gämes=1", timeout=120))
    assert "unknown option 'gämes'" in line and "allowed " in line and "Lexer" not in line
