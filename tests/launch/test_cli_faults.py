"""Faults as a user meets them: Ctrl-C stops every command within a second or two with one line and exit
130; `league.py` writes nothing when it refuses; the last crashes become one line (delay=nan, +foo=1, a full
stdout, an unquoted search spec, non-UTF-8 metrics); the benchmark scripts refuse in one line too."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from policies.league.store import LeagueStore
from tests.launch.test_faults_io import ROOT, command, files_under, one_line_failure

BOT = "py:tests.evaluate.example_bot:FurthestBehind"


def bench(script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python benchmarks/<script> args`` as a user runs it."""
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False)


# ------------------------------------------------------------------ 1. Ctrl-C
def interrupt(args: list[str], ready, tmp_path: Path, settle: float = 1.0, cwd: Path = ROOT):
    """Start ``python <args>``, wait until `ready(stderr so far)` (then `settle` seconds), send SIGINT; return
    (seconds from SIGINT to exit, exit status, stderr)."""
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w") as err:
        proc = subprocess.Popen([sys.executable, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=err,
                                stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 240
            while not ready(err_path.read_text(errors="replace")):
                assert proc.poll() is None, err_path.read_text()[-2000:]
                assert time.monotonic() < deadline, "never got ready"
                time.sleep(0.1)
            time.sleep(settle)
            assert proc.poll() is None, err_path.read_text()[-2000:]
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
    return took, proc.returncode, err_path.read_text()


def last_line_interrupted(stderr: str) -> str:
    lines = [line for line in stderr.replace("\r", "\n").splitlines() if line.strip()]
    assert lines and lines[-1].startswith("interrupted: "), stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    return lines[-1]


FAST_PATH = ("players=[hybrid,hybrid,hybrid,hybrid]", "threads=1")  # built-in bots only: the numba fast path


@pytest.fixture
def fast_path_compiled(tmp_path):
    """The bots' fast-path kernels compiled into the cache by a tiny evaluation, in the test's setup: on a cold cache
    that takes tens of seconds, which a serial test's call would hold the other worker up for (tests/conftest.py)."""
    done = command("evaluate.py", *FAST_PATH, "games=8", "progress=false", f"hydra.run.dir={tmp_path / 'warm'}",
                   timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.serial  # times how fast it happens (tests/conftest.py)
def test_ctrl_c_stops_an_evaluation_inside_the_numba_fast_path_at_once(tmp_path, fast_path_compiled):
    took, status, stderr = interrupt(
        [str(ROOT / "launch" / "evaluate.py"), *FAST_PATH, "games=2000000", f"hydra.run.dir={tmp_path / 'run'}"],
        lambda err: "tournament:" in err, tmp_path, settle=2.0)
    assert status == 130, stderr[-2000:]
    assert took < 3.0, took
    last_line_interrupted(stderr)
    assert not (tmp_path / "run").exists()  # no report, no run folder


@pytest.mark.serial  # times how fast it happens (tests/conftest.py)
def test_ctrl_c_stops_an_evaluation_waiting_on_a_bot(tmp_path, monkeypatch):
    mark = tmp_path / "asked"
    monkeypatch.setenv("SLEEPY_MARK", str(mark))  # the bot writes it when first asked, then sleeps
    took, status, stderr = interrupt(
        [str(ROOT / "launch" / "evaluate.py"), "players=[py:tests.evaluate.test_evaluate_faults:Sleepy,random]",
         "games=2", "progress=false", f"hydra.run.dir={tmp_path / 'run'}"], lambda err: mark.exists(), tmp_path,
        settle=0.2)
    assert status == 130 and took < 3.0, (status, took, stderr[-2000:])
    assert last_line_interrupted(stderr) == "interrupted: evaluation stopped, no report written"


@pytest.mark.serial  # times how fast it happens (tests/conftest.py)
def test_ctrl_c_stops_simulate_inside_the_engine(tmp_path):
    # 1.5M random games take tens of seconds in one engine call; in slices Python sees the signal at once
    took, status, stderr = interrupt([str(ROOT / "launch" / "simulate.py"), "games=1500000"], lambda err: True,
                                     tmp_path, settle=8.0)
    assert status == 130 and took < 3.0, (status, took, stderr[-2000:])
    assert last_line_interrupted(stderr) == "interrupted: simulation stopped"


@pytest.mark.serial  # times how fast it happens (tests/conftest.py)
def test_ctrl_c_stops_a_league_round_and_records_nothing(tmp_path):
    db = tmp_path / "league.db"
    took, status, stderr = interrupt(
        [str(ROOT / "launch" / "league.py"), "play", f"league={db}", "games=400000", "bots=random,fast,hybrid,aggressive"],
        lambda err: "round robin" in err, tmp_path, settle=2.0)
    assert status == 130 and took < 3.0, (status, took, stderr[-2000:])
    last_line_interrupted(stderr)
    with LeagueStore.open(db, create=False, read_only=True) as store:
        assert store.matches() == [] and store.rounds() == []


# ------------------------------------------------------------------ 2. league.py writes nothing when it refuses
@pytest.fixture(scope="module")
def two_player_policy(tmp_path_factory):
    from tests.league.tiny_policy import write_tiny_policy

    return write_tiny_policy(tmp_path_factory.mktemp("policies") / "two", players=2)


def test_adding_a_policy_of_another_player_count_is_one_line_and_writes_nothing(tmp_path, two_player_policy):
    db = tmp_path / "league.db"
    proc = command("league.py", "add", str(two_player_policy), f"league={db}", "panel_games=4")
    one_line_failure(proc, "trained for 2-player classic", "4-player")
    assert proc.stdout == ""  # no "added two"
    assert not db.exists()


def test_play_sits_out_a_member_of_another_player_count_with_a_warning(tmp_path, two_player_policy):
    db = tmp_path / "league.db"
    with LeagueStore.open(db) as store:  # such a member, as an earlier add left it
        store.add_member("two", "external", f"ckpt:{two_player_policy}")
    proc = command("league.py", "play", f"league={db}", "games=8", "bots=random,fast,hybrid,aggressive")
    assert proc.returncode == 0, proc.stderr[-2000:]
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: two sits this round out")]
    assert len(warnings) == 1 and "trained for 2-player classic" in warnings[0]
    with LeagueStore.open(db, create=False, read_only=True) as store:
        assert len(store.matches()) == 8
        two = store.member("two")
        assert all(two.id not in match.seats for match in store.matches())


def test_remove_on_an_empty_file_is_one_line_and_leaves_it_empty(tmp_path):
    empty = tmp_path / "league.db"
    empty.write_bytes(b"")
    one_line_failure(command("league.py", "remove", "random", f"league={empty}"), str(empty),
                     "not a league database")
    assert empty.read_bytes() == b"" and files_under(tmp_path) == {"league.db"}


@pytest.mark.parametrize("args, says", [(["players=9"], "players=9"),
                                        (["bots=random"], "at least 4 members"),
                                        (["bots=nosuch"], "unknown bot")])
def test_a_refused_play_creates_no_database(tmp_path, args, says):
    proc = command("league.py", "play", f"league={tmp_path / 'new' / 'league.db'}", "games=8", *args)
    one_line_failure(proc, says)
    assert files_under(tmp_path) == set()


# ------------------------------------------------------------------ 3. one line for what was left
@pytest.mark.parametrize("delay", ["nan", "inf", "-inf"])
def test_a_delay_that_is_not_a_finite_number_of_seconds_is_one_line(delay):
    one_line_failure(command("play.py", f"delay={delay}", "record=null", stdin="q\n"), f"delay={delay}".rstrip(),
                     "give seconds >= 0")


def test_evaluate_refuses_an_added_setting_it_does_not_know(tmp_path):
    proc = command("evaluate.py", "+foo=1", "games=2", f"hydra.run.dir={tmp_path / 'run'}")
    one_line_failure(proc, "unknown setting 'foo'", "move_time_limit")
    assert files_under(tmp_path) == set()
    one_line_failure(command("play.py", "+foo=1", "record=null", stdin="q\n"), "unknown setting 'foo'", "delay")


def test_an_unquoted_search_spec_in_a_list_gets_the_quoting_hint(tmp_path):
    proc = command("evaluate.py", f"players=[search:{tmp_path}/value?depth=2,random]", "games=2",
                   f"hydra.run.dir={tmp_path / 'run'}")
    one_line_failure(proc, "quote a player spec", "players=[\"search:<path>?depth=2\",random]")


def test_a_refused_evaluation_leaves_no_run_folder_behind(tmp_path):
    proc = command("evaluate.py", "players=[nosuch,random]", "games=2", cwd=tmp_path)
    one_line_failure(proc, "unknown player 'nosuch'")
    assert files_under(tmp_path) == set()  # no outputs/evaluate/<time>/evaluate.log


def to_full_stdout(args: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:
        return subprocess.run([sys.executable, *args], cwd=cwd, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=300, check=False)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_stdout_is_one_line_for_simulate():
    proc = to_full_stdout([str(ROOT / "launch" / "simulate.py"), "games=100"])
    one_line_failure(proc, "cannot write to stdout", "No space left on device")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_stdout_is_one_line_for_evaluate_and_the_report_is_kept(tmp_path):
    proc = to_full_stdout([str(ROOT / "launch" / "evaluate.py"), f"players=[{BOT},random]", "games=4",
                           "progress=false", f"hydra.run.dir={tmp_path}"])
    one_line_failure(proc, "cannot write to stdout", f"the report is in {tmp_path / 'evaluate.json'}")
    assert json.loads((tmp_path / "evaluate.json").read_text())["games"] == 4


def test_leaderboard_warns_of_a_metrics_line_that_is_not_utf8_and_goes_on(tmp_path):
    with LeagueStore.open(tmp_path / "league.db"):
        pass
    (tmp_path / "metrics.jsonl").write_bytes(b'{"iteration": 1, "env_steps": 10}\n{"iteration": 2, "x": "\xff"}\n'
                                             b'not json\n{"iteration": 3, "env_steps": 30}\n')
    proc = command("leaderboard.py", f"league={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    warnings = proc.stderr.strip().splitlines()
    metrics = tmp_path / "metrics.jsonl"
    assert len(warnings) == 2, proc.stderr
    assert warnings[0].startswith(f"warning: {metrics}:2: byte 0xff") and "not UTF-8" in warnings[0]
    assert warnings[1].startswith(f"warning: {metrics}:3: not JSON")
    assert (tmp_path / "leaderboard.html").exists()


# ------------------------------------------------------------------ 4. benchmark scripts
@pytest.mark.parametrize("args, says", [(["--games", "0"], "--games: 0 is not allowed"),
                                        (["--variants", "nosuch"], "unknown variant 'nosuch'"),
                                        (["games=4"], "unrecognized arguments: games=4")])
def test_baselines_refuses_bad_settings_in_one_line(args, says):
    one_line_failure(bench("baselines.py", *args), says)


def test_learning_curve_on_a_missing_run_is_one_line(tmp_path):
    one_line_failure(bench("learning_curve.py", str(tmp_path / "nosuch")), "no such run folder")


def test_learning_curve_warns_of_a_metrics_line_that_is_not_utf8(tmp_path, capsys):
    from benchmarks.learning_curve import curves

    metrics = tmp_path / "metrics.jsonl"
    metrics.write_bytes(b'{"iteration": 1, "minutes": 0.5}\n{"iteration": 2, "minutes": \xff}\n')
    (tmp_path / "summary.json").write_text(json.dumps({"minutes": 2.0, "evaluations": [
        {"iteration": 1, "results": [{"opponent": "random", "win_rate": 0.5, "ci95": [0.4, 0.6]}]}]}))
    assert curves(tmp_path) == {"random": [(0.5, 0.5, 0.4, 0.6)]}
    assert capsys.readouterr().err.startswith(f"warning: {metrics}:2: byte 0xff at column 29 is not UTF-8")
    metrics.write_bytes(b'{"iteration": 1, "minutes": 0.5}\n')
    (tmp_path / "summary.json").write_bytes(b'{"minutes": \xff}')
    one_line_failure(bench("learning_curve.py", str(tmp_path), "--out", str(tmp_path / "c.png")),
                     "summary.json", "not UTF-8")


def test_search_speed_on_empty_weights_is_one_line(tmp_path):
    from tests.league.tiny_policy import write_tiny_policy

    folder = write_tiny_policy(tmp_path / "value")
    for weights in folder.glob("*.pt"):
        weights.write_bytes(b"")
    one_line_failure(bench("search_speed.py", "--value", str(folder), "--positions", "4", "--repeats", "1"),
                     "is damaged", "empty")


@pytest.mark.parametrize("args", [["--seconds", "-5"], ["--seconds", "nan"], ["--repeats", "0"]])
def test_train_throughput_refuses_a_window_that_is_not_positive_before_training(args):
    one_line_failure(bench("train_throughput.py", *args), f"argument {args[0]}", "give a number > 0")


@pytest.mark.parametrize("script, args", [("compile_time.py", ["--nosuch"]), ("engine.py", ["--batch", "x"]),
                                          ("evaluate.py", ["--repeats"]), ("learning_curve.py", []),
                                          ("search_speed.py", []), ("train_throughput.py", ["--algos", "nosuch"])])
def test_argparse_errors_are_one_line(script, args):
    one_line_failure(bench(script, *args), "--help lists the options")
