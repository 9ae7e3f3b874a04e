"""Faults of the disk and of saved state, tried as a user meets them: each is one line on
stderr and exit 2, or the documented fallback, and leaves no file behind."""
from __future__ import annotations

import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from launch.cli import UserError, check_integers, check_output, write_text
from policies.league.store import LeagueStore, LeagueStoreError
from tests.league.full_disk import no_room_left
from tests.league.tiny_policy import write_tiny_policy

ROOT = Path(__file__).resolve().parents[2]
BOT = "py:tests.evaluate.example_bot:FurthestBehind"  # no numba compilation of the built-in bots


def command(script: str, *args: str, cwd: Path = ROOT, file_size_limit: int | None = None,
            stdin: str = "", timeout: float = 180) -> subprocess.CompletedProcess:
    """``python launch/<script> args`` as a user runs it; `file_size_limit` makes every write past that many bytes
    fail as on a full disk (EFBIG, with SIGXFSZ ignored), the one way to fill a disk without privileges."""
    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size_limit, file_size_limit))

    return subprocess.run([sys.executable, str(ROOT / "launch" / script), *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=timeout, check=False,
                          preexec_fn=limit_file_size if file_size_limit is not None else None)


def one_line_failure(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder no one may write in, root included: chmod for a user, the immutable flag for root."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
    elif subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False).returncode != 0:
        pytest.skip("running as root without chattr +i: no folder is read-only to this process")
    yield folder
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True, check=False)
    folder.chmod(0o755)


# ------------------------------------------------------------------ 1. outputs that cannot be written
def unwritable_cases(tmp: Path) -> list[tuple[str, list[str], str]]:
    """(script, args, what the line says) for every output option of every command, each under a file or a
    folder where a file is meant. Each is refused before any work (no game, no Ray)."""
    a_file = tmp / "a_file"
    a_folder = tmp / "a_folder"
    run = tmp / "run"
    return [
        ("evaluate.py", [f"out={a_file}/report.json", f"hydra.run.dir={run}"], "is a file, not a folder"),
        ("evaluate.py", [f"out={a_folder}", f"hydra.run.dir={run}"], "is a folder"),
        ("evaluate.py", [f"record={a_file}/r.jsonl", f"hydra.run.dir={run}"], "is a file, not a folder"),
        ("evaluate.py", [f"hydra.run.dir={a_file}/run"], "is a file, not a folder"),
        ("evaluate.py", [f"hydra.run.dir={a_file}"], "is a file, not a folder"),
        ("leaderboard.py", [f"league={tmp / 'league'}", f"out={a_file}/board.html"], "is a file, not a folder"),
        ("leaderboard.py", [f"league={tmp / 'league'}", f"out={a_folder}"], "is a folder"),
        ("league.py", ["play", f"league={a_file}/league.db", "games=4"], "is a file, not a folder"),
        ("play.py", [f"record={a_file}/r.jsonl"], "is a file, not a folder"),
        ("play.py", [f"record={a_folder}"], "is a folder"),
        ("train.py", ["+exp=smoke", f"hydra.run.dir={a_file}/run"], "is a file, not a folder"),
    ]


@pytest.mark.parametrize("case", range(11))
def test_an_output_that_cannot_be_written_is_one_line_before_any_work(tmp_path, case):
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "a_folder").mkdir()
    with LeagueStore.open(tmp_path / "league" / "league.db"):
        pass
    script, args, says = unwritable_cases(tmp_path)[case]
    before = files_under(tmp_path)
    proc = command(script, *args, stdin="q\n")
    one_line_failure(proc, says)
    assert files_under(tmp_path) == before  # no run folder, no report, no empty file


def test_a_read_only_folder_is_refused_before_the_work(read_only_folder):
    proc = command("evaluate.py", f"players=[{BOT},{BOT}]", "games=4", f"out={read_only_folder}/report.json",
                   f"hydra.run.dir={read_only_folder.parent / 'run'}", "progress=false")
    one_line_failure(proc, "out=", "cannot write there")
    assert not (read_only_folder.parent / "run").exists() and not any(read_only_folder.iterdir())


def test_resume_of_a_read_only_run_folder_is_one_line(read_only_folder):
    subprocess.run(["chattr", "-i", str(read_only_folder)], capture_output=True, check=False)
    read_only_folder.chmod(0o755)
    (read_only_folder / "overrides.txt").write_text("+exp=smoke\n")
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(read_only_folder)], check=True)
    else:
        read_only_folder.chmod(0o555)
    proc = command("train.py", f"resume={read_only_folder}")
    one_line_failure(proc, "hydra.run.dir=", "cannot write there")
    assert files_under(read_only_folder) == {"overrides.txt"}


def test_a_full_disk_is_refused_up_front(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "disk_usage", lambda path: SimpleNamespace(total=1 << 30, used=1 << 30, free=512))
    with pytest.raises(UserError, match=r"out=.*the disk holding .* is full \(512 bytes free\)"):
        check_output(tmp_path / "report.json", "out")
    assert not any(tmp_path.iterdir())


def test_a_disk_that_fills_during_the_run_leaves_no_report(tmp_path):
    # The report is a few kB: a 1 kB limit lets the run start (the checks pass) and fails its last write.
    # (Hydra's own .hydra/ files are larger: left out here; on a real disk the 1 MiB checked free holds them.)
    out = tmp_path / "report.json"
    warm = command("evaluate.py", f"players=[{BOT},{BOT}]", "games=4", "variant=quick", f"out={out}",
                   f"hydra.run.dir={tmp_path / 'run'}", "progress=false")  # numba's cache filled before the limit
    assert warm.returncode == 0, warm.stderr
    out.unlink()
    proc = command("evaluate.py", f"players=[{BOT},{BOT}]", "games=4", "variant=quick", f"out={out}",
                   f"hydra.run.dir={tmp_path / 'run'}", "hydra.output_subdir=null", "progress=false",
                   file_size_limit=1024)
    one_line_failure(proc, f"out={out}: cannot write the report there (File too large)")
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".report")]


def test_failed_writes_leave_no_partial_file(tmp_path):
    import numpy as np

    from ludo_env.rules import Rules
    from policies.records import RecordError, RecordWriter

    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    writer = RecordWriter(tmp_path / "new.jsonl", Rules.load("classic"), "human")
    state = np.zeros((1, 26), dtype=np.int16)
    appended = tmp_path / "appended.jsonl"
    RecordWriter(appended, Rules.load("classic"), "human").write(["g"], state, [[1, 0, 0, 0]], [0])
    kept = appended.read_bytes()
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(kept) + 100, old_limit[1]))
        with pytest.raises(RecordError, match="new.jsonl' cannot be written: File too large"):
            writer.write(["g"] * 3, np.repeat(state, 3, axis=0), [[1, 0, 0, 0]] * 3, [0] * 3)
        with pytest.raises(RecordError):
            RecordWriter(appended, Rules.load("classic"), "human").write(["g"], state, [[1, 0, 0, 0]], [0])
        with pytest.raises(OSError):
            write_text(tmp_path / "page.html", "x" * 10_000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)
    assert appended.read_bytes() == kept  # no half line after the good ones
    assert sorted(p.name for p in tmp_path.iterdir()) == ["appended.jsonl"]  # no empty file, no temporary


# ------------------------------------------------------------------ 2. export onto a full disk
def test_export_onto_a_full_disk_is_one_line_and_leaves_no_temporary_folder(tmp_path):
    policy = write_tiny_policy(tmp_path / "policy")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = command("export.py", f"ckpt={policy}", "format=torchscript", f"out={out_dir / 'agent.pt'}", "check=0",
                   file_size_limit=2048)
    one_line_failure(proc, "agent.pt", "File too large")
    assert not any(out_dir.iterdir())


# ------------------------------------------------------------------ 3. a damaged league database
def damaged_league(folder: Path) -> Path:
    """A league.db that opens, with its later pages overwritten: queries on them fail."""
    db = folder / "league.db"
    with LeagueStore.open(db) as store:
        for i in range(200):
            store.add_member(f"bot:{i}-" + "x" * 200, kind="bot", spec="random")
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    page = 4096
    data[3 * page:] = bytes((b * 7 + 13) & 255 for b in data[3 * page:])
    db.write_bytes(bytes(data))
    with sqlite3.connect(db) as check:  # it opens; pages fail later
        check.execute("SELECT value FROM meta").fetchall()
    return db


def test_a_damaged_league_database_is_one_line_naming_it(tmp_path):
    db = damaged_league(tmp_path)
    with pytest.raises(LeagueStoreError, match="damaged"):
        LeagueStore.open(db)
    one_line_failure(command("league.py", "show", f"league={db}"), str(db), "damaged")
    one_line_failure(command("leaderboard.py", f"league={tmp_path}"), str(db), "damaged")
    assert not (tmp_path / "leaderboard.html").exists()


# ------------------------------------------------------------------ 3b. a league on a full disk during training
TD_TINY = ["+exp=td_lambda", "algo.value=mlp", "algo.hidden=[8]", "algo.games=16", "algo.steps_per_iteration=20",
           "eval.every=0", "eval.final_games=0", "checkpoint.every=1", "budget.iterations=6", "wandb.mode=disabled"]


def td_trainer_with_a_league(run_dir: Path, full_at: int, in_save: bool):
    """The TD(lambda) trainer recording a league round at every step (in `advance`) or at every save, as the RLlib
    trainer records snapshots and rating rounds; from iteration `full_at` on its league has no room left."""
    from launch.training.trainers.td_lambda import TDLambda
    from tests.launch.configs import train_config

    class WithALeague(TDLambda):
        def start(self, state):
            self.league = LeagueStore.open(self.run.path / "league.db")
            self.seats = [self.league.ensure_member(name, "bot", name).id for name in ("random", "fast", "hybrid",
                                                                                        "defensive")]
            return super().start(state)

        def record_round(self, state):
            if state.iteration >= full_at:
                no_room_left(self.league)
            with self.league.transaction():
                round_id = self.league.add_round("training", self.rules.name, iteration=state.iteration)
                self.league.add_matches(round_id, self.rules.name, [(self.seats, (1, 2, 3, 4))] * 2_000)

        def advance(self, state):
            super().advance(state)
            if not in_save:
                self.record_round(state)

        def save(self, state):
            if in_save:
                self.record_round(state)
            return super().save(state)

        def close(self):
            self.league.close()

    return WithALeague(train_config(*TD_TINY, run_dir=str(run_dir)))


@pytest.mark.parametrize("in_save", [False, True], ids=["during a step", "during a save"])
def test_a_league_write_the_disk_has_no_room_for_stops_the_run_in_one_line_and_it_resumes(tmp_path, in_save):
    from launch.training.loop import run
    from launch.training.runs import RunDir

    run_dir = tmp_path / "run"
    with pytest.raises(UserError) as stopped:
        run(td_trainer_with_a_league(run_dir, full_at=3, in_save=in_save))
    line = str(stopped.value)
    assert "\n" not in line and "database or disk is full" in line and str(run_dir / "league.db") in line, line
    checkpoints = RunDir(run_dir).checkpoint_dirs()
    if in_save:  # the checkpoint of iteration 3 failed with its league: the one of iteration 2 is the run's end
        assert line.startswith("a checkpoint at iteration 3 could not be written (database or disk is full: "), line
        assert [c.name for c in checkpoints] == ["iter_000001", "iter_000002"]
        assert line.endswith(f"the newest complete one is {checkpoints[-1]} (resume with: python launch/train.py "
                             f"resume={run_dir}); the run stopped at iteration 3"), line
    else:  # the step's league round failed; the run saves what it trained, as after any failure mid-run
        assert line.startswith(f"{run_dir / 'league.db'}: the league could not be written (database or disk is "
                               "full); the run stopped at iteration 3 after saving "), line
        assert [c.name for c in checkpoints][-1] == "iter_000003"
        assert line.endswith(f"(resume with: python launch/train.py resume={run_dir})"), line
    with LeagueStore.open(run_dir / "league.db", create=False) as league:  # every committed round, no half one
        assert [r["iteration"] for r in league.rounds()] == [1, 2]
        assert len(league.matches()) == 2 * 2_000

    # A resume with room again goes on from the newest complete checkpoint to the budget's end.
    from launch.training.trainers.td_lambda import TDLambda
    from tests.launch.configs import train_config

    run(TDLambda(train_config(*TD_TINY, f"resume={run_dir}", run_dir=str(run_dir))))
    assert RunDir(run_dir).checkpoint_dirs()[-1].name == "iter_000006"


# ------------------------------------------------------------------ 4. damaged RLlib state in the newest checkpoint
def fake_checkpoint(run: Path, iteration: int, cfg) -> Path:
    """A checkpoint's files: small pickles for RLlib's state, and main's real policy as `cfg` builds it."""
    import json
    import pickle

    from launch.training.build import main_model_config
    from launch.training.runs import sign_checkpoint
    from ludo_env.core import ACTION_SPACE, observation_space
    from policies.checkpoints import write_policy
    from policies.modules import module_spec

    checkpoint = run / "checkpoints" / f"iter_{iteration:06d}"
    model_config = main_model_config(cfg)
    module = module_spec(cfg.algo.name, observation_space(cfg.obs.name), ACTION_SPACE, model_config).build()
    write_policy(checkpoint / "policy", cfg.algo.name, model_config, module.state_dict())
    module = checkpoint / "algorithm" / "learner_group" / "learner" / "rl_module" / "main"
    module.mkdir(parents=True)
    (checkpoint / "algorithm" / "rllib_checkpoint.json").write_text("{}")
    (checkpoint / "algorithm" / "algorithm_state.pkl").write_bytes(pickle.dumps({"iteration": iteration}))
    (module / "module_state.pkl").write_bytes(pickle.dumps({"weights": list(range(100))}))
    (checkpoint / "run_state.json").write_text(json.dumps({"iteration": iteration}))
    sign_checkpoint(checkpoint)  # as training signs each checkpoint it writes (launch.training.runs)
    return checkpoint


@pytest.mark.parametrize("damage", ["module", "algorithm"])
def test_resume_falls_back_past_damaged_rllib_state(tmp_path, capsys, damage):
    from launch.training.runs import RunDir
    from launch.training.trainers.rllib import find_resume_point
    from tests.launch.configs import train_config

    cfg = train_config("+exp=smoke", f"resume={tmp_path}", "league.max_snapshots=3")
    fake_checkpoint(tmp_path, 1, cfg)
    newest = fake_checkpoint(tmp_path, 2, cfg)
    pickle_file = (newest / "algorithm" / "learner_group" / "learner" / "rl_module" / "main" / "module_state.pkl"
                   if damage == "module" else newest / "algorithm" / "algorithm_state.pkl")
    pickle_file.write_bytes(pickle_file.read_bytes()[:20])  # truncated
    capsys.readouterr()  # RLlib's deprecation notes from building the modules
    state, checkpoint = find_resume_point(cfg, RunDir(tmp_path))
    assert checkpoint.name == "iter_000001" and state.iteration == 1
    [warning] = capsys.readouterr().err.strip().splitlines()
    assert warning.startswith("warning: iter_000002 is damaged") and pickle_file.name in warning


def test_a_resume_onto_another_encoder_is_refused_not_fallen_back_from(tmp_path):
    from launch.training.runs import RunDir
    from launch.training.trainers.rllib import find_resume_point
    from tests.launch.configs import train_config

    fake_checkpoint(tmp_path, 1, train_config("+exp=smoke", "obs=afterstates", "network=token_set"))
    cfg = train_config("+exp=smoke", f"resume={tmp_path}", "network=token_set")  # today's default: egocentric
    with pytest.raises(UserError, match="built with obs=afterstates and this config gives obs=egocentric: add "
                                        "obs=afterstates to resume it"):
        find_resume_point(cfg, RunDir(tmp_path))


def test_a_run_folder_player_falls_back_past_a_damaged_policy(tmp_path, capsys):
    from policies.checkpoints import find_policy

    write_tiny_policy(tmp_path / "checkpoints" / "iter_000001" / "policy")
    newest = write_tiny_policy(tmp_path / "checkpoints" / "iter_000002" / "policy")
    (newest / "weights.pt").write_bytes(b"garbage")
    capsys.readouterr()  # RLlib's deprecation notes from building the modules
    assert find_policy(tmp_path) == tmp_path / "checkpoints" / "iter_000001" / "policy"
    [warning] = capsys.readouterr().err.strip().splitlines()
    assert "iter_000002 is damaged" in warning and "using the older iter_000001" in warning


# ------------------------------------------------------------------ 5. huge integers
@pytest.mark.parametrize("script,args,says", [
    ("evaluate.py", ["games=99999999999999999999999"], "games=99999999999999999999999 is not allowed"),
    ("evaluate.py", ["seed=99999999999999999999999"], "give an integer in [0, 9223372036854775807]"),
    ("simulate.py", ["games=99999999999999999999999"], "give an integer in [1, 10000000]"),
    ("league.py", ["play", "games=99999999999999999999999"], "give an integer in [1, 10000000]"),
    ("play.py", ["seed=99999999999999999999999"], "seed=99999999999999999999999 is not allowed"),
])
def test_a_huge_integer_is_one_line(tmp_path, script, args, says):
    where = {"evaluate.py": [f"hydra.run.dir={tmp_path / 'run'}"], "league.py": [f"league={tmp_path / 'league.db'}"]}
    one_line_failure(command(script, *args, *where.get(script, []), cwd=tmp_path), says)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("script,args,says", [
    ("paired.py", ["nosuch", "random", "hybrid"], "error: unknown variant 'nosuch': choose one of classic,"),
    ("strength.py", ["classic", "nosuchbot", "--games", "10"], "error: unknown player 'nosuchbot': use a bot name"),
    ("action_gaps.py", ["ckpt:/nonexistent"], "error: '/nonexistent' holds no policy: give a training run folder"),
    ("snapshot_average.py", ["."], "error: '.' has no league.db: give a PPO or DQN run folder"),
])
def test_a_benchmark_given_a_bad_variant_player_or_folder_says_so_in_one_line(tmp_path, script, args, says):
    one_line_failure(subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], cwd=tmp_path,
                                    capture_output=True, text=True, timeout=300, check=False), says)


@pytest.mark.parametrize("args,says", [
    (["classic", "random", "nosuchbot"], "error: unknown player 'nosuchbot': use a bot name"),
    (["classic", "random", "--opponents", "random,nosuchbot"], "error: unknown player 'nosuchbot': use a bot name"),
    (["classic", "random", "games=4"], "error: unknown player 'games=4': use a bot name"),
])
def test_the_strength_table_refuses_a_bad_player_before_playing_any_row(tmp_path, args, says):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "strength.py"), *args, "--games", "4"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    one_line_failure(done, says)
    assert done.stdout == ""  # not the good player's rows first


def test_every_integer_setting_of_a_config_is_range_checked():
    from launch.training.schema import check
    from tests.launch.configs import train_config

    with pytest.raises(UserError, match=r"algo\.train_batch_size=99999999999999999999999 is not allowed"):
        check_integers({"algo": {"train_batch_size": 99999999999999999999999}})
    with pytest.raises(UserError, match=r"hidden\[1\]=-5 is not allowed"):
        check_integers({"hidden": [8, -5]}, {"hidden": (1, 4096)})
    cfg = train_config("+exp=smoke")
    cfg.seed = 2**70
    with pytest.raises(UserError, match=r"^seed=\d+ is not allowed: give an integer in \[0, 9223372036854775807\]$"):
        check(cfg)


# ------------------------------------------------------------------ 6. league state left half-written
def league_members(db: Path) -> list[str]:
    with LeagueStore.open(db, read_only=True) as store:
        return [m.name for m in store.members()]


@pytest.mark.slow  # three league.py runs, each loading a policy: about 35 s on 2 busy cores
def test_a_failed_add_leaves_the_league_as_it_was_and_remove_takes_a_member_out(tmp_path):
    db = tmp_path / "league.db"
    good = write_tiny_policy(tmp_path / "good" / "policy")
    bad = write_tiny_policy(tmp_path / "bad" / "policy")
    (bad / "weights.pt").write_bytes(b"garbage")
    added = command("league.py", "add", str(good), f"league={db}", "panel_games=4")
    assert added.returncode == 0, added.stderr
    one_line_failure(command("league.py", "add", str(bad), f"league={db}", "panel_games=4"), "weights.pt")
    assert league_members(db) == ["good"]  # the damaged one was never saved
    removed = command("league.py", "remove", "good", f"league={db}")
    assert removed.returncode == 0 and "removed: good" in removed.stdout, removed.stderr
    assert league_members(db) == []
    one_line_failure(command("league.py", "remove", "nobody", f"league={db}"), "no member named 'nobody'")


@pytest.mark.slow  # about 40 s on 2 busy cores
def test_play_leaves_out_a_member_whose_files_have_gone(tmp_path):
    db = tmp_path / "league.db"
    gone = write_tiny_policy(tmp_path / "gone" / "policy")
    assert command("league.py", "add", str(gone), f"league={db}", "panel_games=4").returncode == 0
    shutil.rmtree(tmp_path / "gone")
    played = command("league.py", "play", f"league={db}", "games=4", "bots=[random,fast]", "players=2")
    assert played.returncode == 0, played.stderr
    warnings = [line for line in played.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "gone sits this round out" in warnings[0]
    assert "2 members" in played.stderr


# ------------------------------------------------------------------ 7. processes a killed driver left behind
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc (Linux)")
def test_a_restart_stops_what_a_killed_driver_of_the_run_left_running(tmp_path):
    import json

    from launch.training.runs import RAY_SESSION, RunDir, _proc_start, stop_leftovers

    session = tmp_path / "ray" / "session_x"
    (session / "logs").mkdir(parents=True)
    (tmp_path / "run" / "wandb").mkdir(parents=True)
    hold = "import sys, time; f = open(sys.argv[1], 'a'); print('ready', flush=True); time.sleep(120)"
    agent = subprocess.Popen([sys.executable, "-c", hold, str(session / "logs" / "dashboard_agent.log")],
                             stdout=subprocess.PIPE, text=True)
    wandb = subprocess.Popen([sys.executable, "-c", hold, str(tmp_path / "run" / "wandb" / "run.wandb")],
                             stdout=subprocess.PIPE, text=True)
    bystander = subprocess.Popen([sys.executable, "-c", hold, str(tmp_path / "elsewhere.log")],
                                 stdout=subprocess.PIPE, text=True)
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        for process in (agent, wandb, bystander):
            assert process.stdout.readline().strip() == "ready"
        run = RunDir(tmp_path / "run")
        record = {"session_dir": str(session), "driver_pid": driver.pid, "driver_start": _proc_start(driver.pid)}
        (run.path / RAY_SESSION).write_text(json.dumps(record))
        assert stop_leftovers(run) == []  # the driver runs: its processes are its own
        driver.kill()
        driver.wait()
        assert sorted(stop_leftovers(run)) == sorted([agent.pid, wandb.pid])
        assert agent.wait(timeout=10) == -signal.SIGKILL and wandb.wait(timeout=10) == -signal.SIGKILL
        assert bystander.poll() is None and not (run.path / RAY_SESSION).exists()
    finally:
        for process in (agent, wandb, bystander, driver):
            process.kill()
            process.wait()


def _is_watchdog_of(pid: int, driver: int) -> bool:
    from launch.training.watchdog import MARKER

    try:
        with open(f"/proc/{pid}/stat") as f:
            parent = int(f.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except (OSError, ValueError):
        return False
    return parent == driver and any(arg.startswith(MARKER.encode() + b"=") for arg in argv)


@pytest.mark.slow  # 45 s; the watchdog alone is tested in CI (tests/launch/test_training_faults_ray.py)
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc (Linux)")
def test_resume_after_kill_9_of_the_driver_and_its_watchdog_stops_its_ray_agents(tmp_path):
    import json
    import time

    from launch.training.runs import RAY_SESSION, _holds_open, _processes

    run_dir = tmp_path / "run"
    args = ["+exp=smoke", "budget.iterations=3", "eval.final_games=0", "wandb.mode=offline"]
    driver = subprocess.Popen([sys.executable, "launch/train.py", *args, f"hydra.run.dir={run_dir}"], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 400
        while not (run_dir / "checkpoints" / "iter_000001").is_dir():
            assert driver.poll() is None and time.monotonic() < deadline
            time.sleep(0.5)
        session = json.loads((run_dir / RAY_SESSION).read_text())["session_dir"].rstrip("/") + "/"
        # The watchdog (launch/training/watchdog.py) first, as an OOM killer might take it: the resume's own clean-up is
        # the net under it. Then the driver alone, as `kill -9 <pid>` does; what it started is left to itself.
        watchdogs = [pid for pid, _ in _processes() if _is_watchdog_of(pid, driver.pid)]
        assert len(watchdogs) == 1, watchdogs
        os.kill(watchdogs[0], signal.SIGKILL)
        driver.kill()
        driver.wait()
        time.sleep(2)
        left = [pid for pid, _ in _processes() if _holds_open(pid, [session])]
        assert left, "no Ray process outlived the driver: nothing to test"
        resumed = subprocess.run([sys.executable, "launch/train.py", f"resume={run_dir}"], cwd=ROOT,
                                 capture_output=True, text=True, timeout=400, check=False)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        notes = [line for line in resumed.stderr.splitlines() if line.startswith("note: stopped")]
        assert len(notes) == 1, resumed.stderr[-3000:]
        assert not [pid for pid, _ in _processes() if _holds_open(pid, [session])]
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
