"""launch/submit.py: argument splitting, the token lookup, the upload's excludes and local validation (no
Ray cluster), then end to end against a real head started here (marked `slow` and `cluster`: about 140 s
on 2 idle cores, most of it numba compiling the kernels in the job's fresh copy of the project)."""
from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from launch.cli import UserError
from launch.submit import (
    ALWAYS_LEFT_OUT,
    DEFAULT_ADDRESS,
    STOP_GRACE_S,
    Request,
    auth_headers,
    entrypoint,
    find_token,
    left_out,
    parse_args,
    runtime_env,
    validate,
)

ROOT = Path(__file__).resolve().parents[2]


def run_submit(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "launch/submit.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=env if env is not None else clean_env(), check=False)


def clean_env(**extra: str) -> dict:
    """This process's environment without anything that points Ray somewhere else or carries a token."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS", "RAY_AUTH_"))}
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.stdout[-2000:], proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    return lines[0]


# ---------------------------------------------------------------- arguments
def test_submit_options_flags_and_training_overrides_are_told_apart():
    req = parse_args(["+exp=dqn_selfplay", "cluster.address=http://head:8265", "--follow",
                      "resources=cluster_gpu", "cluster.entrypoint_num_cpus=2", "cluster.job_id=ludo-1",
                      "eval.panel=[random, hybrid]"], environ={})
    assert req.command == "submit" and req.follow
    assert req.overrides == ["+exp=dqn_selfplay", "resources=cluster_gpu", "eval.panel=[random, hybrid]"]
    assert (req.address, req.address_given) == ("http://head:8265", True)
    assert (req.entrypoint_num_cpus, req.entrypoint_num_gpus, req.submission_id) == (2.0, None, "ludo-1")


def test_sub_commands_take_one_job_id_and_no_training_overrides():
    req = parse_args(["logs", "raysubmit_1", "--follow", "cluster.token=t"], environ={})
    assert (req.command, req.job_id, req.follow, req.token) == ("logs", "raysubmit_1", True, "t")
    assert req.overrides == []
    assert parse_args(["stop", "raysubmit_1"], environ={}).command == "stop"
    with pytest.raises(UserError, match="got no job id"):
        parse_args(["status"], environ={})
    with pytest.raises(UserError, match="extra arguments budget.minutes=5"):
        parse_args(["status", "raysubmit_1", "budget.minutes=5"], environ={})
    with pytest.raises(UserError, match="not with stop"):
        parse_args(["stop", "raysubmit_1", "--follow"], environ={})
    assert parse_args(["-h"], environ={}).command == "help"


@pytest.mark.parametrize("arg, message", [
    ("--multirun", "unknown option --multirun"),
    ("cluster.adress=http://h:8265", "cluster.adress is not an option of submit: choose one of cluster.addr"),
    ("cluster.token=", "cluster.token needs a value"),
    ("cluster.entrypoint_num_gpus=one", "cluster.entrypoint_num_gpus=one is not allowed"),
    ("cluster.entrypoint_num_cpus=-1", "cluster.entrypoint_num_cpus=-1 is not allowed"),
    ("cluster.address=ray://head:10001", "is a Ray Client address"),
])
def test_bad_submit_options_are_refused(arg, message):
    with pytest.raises(UserError, match=re.escape(message)):
        parse_args(["+exp=smoke", arg], environ={})


def test_the_address_defaults_to_ray_api_server_address_never_to_ray_address():
    assert parse_args([], environ={}).address == DEFAULT_ADDRESS
    assert parse_args([], environ={"RAY_ADDRESS": "10.0.0.1:6379"}).address == DEFAULT_ADDRESS  # the GCS
    req = parse_args([], environ={"RAY_API_SERVER_ADDRESS": "10.0.0.1:8265"})
    assert (req.address, req.address_given) == ("http://10.0.0.1:8265", False)  # Ray's default scheme
    given = parse_args(["cluster.address=https://h/"], environ={"RAY_API_SERVER_ADDRESS": "x:1"})
    assert given.address == "https://h"


# ---------------------------------------------------------------- token
def test_the_token_is_looked_up_where_ray_looks_first_found_wins(tmp_path):
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text("from-home\n")
    path_file = tmp_path / "via_path"
    path_file.write_text("from-path")
    given = tmp_path / "given"
    given.write_text("  from-file\n")
    env = {"RAY_AUTH_TOKEN": "from-env", "RAY_AUTH_TOKEN_PATH": str(path_file)}

    def lookup(req: Request, environ: dict):
        return find_token(req, environ, home=home)

    assert lookup(Request(token="literal", token_file=str(given)), env) == ("literal", "cluster.token")
    assert lookup(Request(token_file=str(given)), env)[0] == "from-file"
    assert lookup(Request(), env) == ("from-env", "RAY_AUTH_TOKEN")
    assert lookup(Request(), {"RAY_AUTH_TOKEN_PATH": str(path_file)})[0] == "from-path"
    assert lookup(Request(), {}) == ("from-home", str(home / ".ray" / "auth_token"))
    assert find_token(Request(), {}, home=tmp_path / "nobody") == (None, "none found")
    # RAY_AUTH_MODE=disabled silences Ray's own sources, not a token given on purpose
    assert lookup(Request(), {**env, "RAY_AUTH_MODE": "disabled"})[0] is None
    assert lookup(Request(token="literal"), {"RAY_AUTH_MODE": "disabled"})[0] == "literal"
    with pytest.raises(UserError, match="cluster.token_file=.*cannot read the token"):
        lookup(Request(token_file=str(tmp_path / "missing")), {})
    with pytest.raises(UserError, match="RAY_AUTH_TOKEN_PATH=.*cannot read the token"):
        lookup(Request(), {"RAY_AUTH_TOKEN_PATH": str(tmp_path / "missing")})
    assert auth_headers("abc") == {"Authorization": "Bearer abc"} and auth_headers(None) == {}


# ---------------------------------------------------------------- what is submitted
def test_the_entrypoint_hands_train_the_overrides_exactly_as_typed():
    overrides = ["+exp=smoke", "eval.panel=[random, hybrid]", "name=it's", "hydra.run.dir=/runs/a b"]
    command = entrypoint(overrides)
    assert command.startswith("python launch/train.py ")
    assert shlex.split(command)[2:] == overrides


EXPERIMENTS = sorted(p.stem for p in (ROOT / "conf" / "exp").glob("*.yaml"))


def test_typos_and_refused_values_fail_locally_in_one_line():
    validate(["+exp=smoke", "resources=cluster_gpu", "hydra.run.dir=/shared/run", "resume=/shared/old"])
    for overrides, message in [
        (["+exp=smoke", "algo.lrr=1"], "Key 'lrr' not in"),
        (["resources=clusterr"], "choose one of cluster_gpu, laptop, workstation"),
        (["league.pfsp=bad"], "league.pfsp='bad' is not allowed"),
        (["+exp=nope"], f"choose one of {', '.join(EXPERIMENTS)}"),
    ]:
        with pytest.raises(UserError, match=re.escape(message)) as err:
            validate(overrides)
        assert "\n" not in str(err.value)


def test_a_typo_fails_before_any_connection():
    # the port is closed: had submit tried to connect first, the error would be about the address
    proc = run_submit("+exp=smoke", "algo.lrr=1", f"cluster.address=http://127.0.0.1:{free_port()}")
    assert "algo.lrr" in one_error_line(proc)


def test_an_address_where_no_dashboard_answers_is_one_line():
    proc = run_submit("status", "raysubmit_1", f"cluster.address=127.0.0.1:{free_port()}")
    assert "no Ray dashboard answers at http://127.0.0.1:" in one_error_line(proc)


def test_the_upload_leaves_out_runs_caches_and_large_files_as_ray_packs_it(tmp_path):
    from ray._private.runtime_env.packaging import _zip_files  # the packing the job API runs

    project = tmp_path / "project"
    # conf/wandb/ and a module named build.py are project files, although wandb/ and build/ are left out
    kept = {"launch/train.py", "launch/training/build.py", "conf/config.yaml", "conf/wandb/offline.yaml",
            "benchmarks/results/curve.png"}
    for rel in [*kept, ".git/HEAD", "outputs/train/run/x.json", "policies/__pycache__/m.cpython-311.pyc",
                "ludo_league.egg-info/PKG-INFO", "wandb/run/log", "build/lib/x.py"]:
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("x")
    for rel in ["data/big[1].bin", "outputs/huge.bin"]:  # sparse files: size without writing it
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        with open(project / rel, "wb") as f:
            f.truncate(11 * 1024 * 1024)
    excludes, large = left_out(project)
    assert large == ["data/big[1].bin"]  # outputs/ is not even walked
    package = tmp_path / "pkg.zip"
    _zip_files(str(project), excludes, str(package), include_gitignore=False)
    packed = {n for n in zipfile.ZipFile(package).namelist() if not n.endswith("/")}
    assert packed == kept


def test_the_job_gets_the_project_and_time_to_checkpoint_when_stopped():
    env, large = runtime_env()
    assert env["working_dir"] == str(ROOT) and set(ALWAYS_LEFT_OUT) <= set(env["excludes"])
    assert env["env_vars"] == {"RAY_JOB_STOP_WAIT_TIME_S": str(STOP_GRACE_S)}
    assert all((ROOT / rel).stat().st_size >= 10 * 1024 * 1024 for rel in large)


# ---------------------------------------------------------------- end to end, on a local head
def processes() -> dict[int, tuple[int, str, str]]:
    """Every live process: pid -> (parent pid, state, command line), read from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()  # the name may hold spaces
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue  # gone meanwhile
        found[int(entry.name)] = (int(fields[1]), fields[0], cmdline)
    return found


class Head:
    """A Ray head on 127.0.0.1 in its own temp dir, with token authentication and free ports throughout,
    so that it meets no other Ray on the machine; stopped by its own PIDs."""

    def __init__(self):
        self.temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # Ray's socket paths must stay short
        self.token = secrets.token_hex(32)
        self.dashboard = free_port()
        # the job's `python` is the one on the head's PATH: this interpreter's
        self.env = clean_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=self.token, RAY_USAGE_STATS_ENABLED="0",
                             PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        ray = shutil.which("ray", path=self.env["PATH"])
        assert ray, "the ray command is not on PATH"
        ports = {name: free_port() for name in (
            "port", "ray-client-server-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port",
            "metrics-export-port", "runtime-env-agent-port", "node-manager-port")}
        self.log = open(self.temp / "ray_start.log", "w")
        # --block keeps `ray start` the ancestor of every process of this head: teardown finds them all
        self.proc = subprocess.Popen(
            [ray, "start", "--head", "--block", f"--temp-dir={self.temp}", "--node-ip-address=127.0.0.1",
             "--dashboard-host=127.0.0.1", f"--dashboard-port={self.dashboard}", "--include-dashboard=true",
             "--num-cpus=2", "--num-gpus=0", "--object-store-memory=200000000", "--disable-usage-stats",
             *(f"--{name}={port}" for name, port in ports.items())],
            env=self.env, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.temp)
        self.address = f"http://127.0.0.1:{self.dashboard}"

    def wait_ready(self, timeout: float = 120) -> None:
        import requests

        headers = {"Authorization": f"Bearer {self.token}"}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ray start exited: {(self.temp / 'ray_start.log').read_text()[-3000:]}")
            try:
                if requests.get(f"{self.address}/api/jobs/", headers=headers, timeout=5).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(1)
        raise RuntimeError(f"the dashboard did not answer in {timeout:.0f} s")

    def pids(self) -> set[int]:
        """`ray start`'s descendants, and anything naming this head's temp dir (had one left the tree)."""
        table = processes()
        mine, todo = set(), [self.proc.pid]
        while todo:
            pid = todo.pop()
            mine.add(pid)
            todo += [child for child, (parent, _, _) in table.items() if parent == pid and child not in mine]
        mine |= {pid for pid, (_, _, cmdline) in table.items() if str(self.temp) in cmdline}
        return mine

    def stop(self) -> None:
        pids = self.pids()  # before any of them dies: orphans would leave the tree
        # `ray start --block` and the autoscaler monitor sit out SIGTERM, and nothing here needs saving
        for sig, wait_s in ((signal.SIGTERM, 5), (signal.SIGKILL, 10)):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                table = processes()
                pids = {pid for pid in pids if pid in table and table[pid][1] != "Z"}  # zombies are gone
                if not pids:
                    break
                time.sleep(0.5)
            if not pids:
                break
        self.proc.wait(timeout=10)
        self.log.close()
        shutil.rmtree(self.temp, ignore_errors=True)


@pytest.fixture(scope="module")
def head():
    from ray._private.utils import get_dashboard_dependency_error

    if get_dashboard_dependency_error() is not None:
        pytest.skip("ray start --head needs Ray's dashboard packages: pip install -e '.[cluster]'")
    if not Path("/proc").is_dir():
        pytest.skip("the head is stopped by PIDs read from /proc (Linux)")
    started = Head()
    try:
        started.wait_ready()
        yield started
    finally:
        started.stop()


def submit_args(head: Head, *args: str) -> list[str]:
    return [*args, f"cluster.address={head.address}"]


def job_id_of(stdout: str) -> str:
    match = re.search(r"^submitted (\S+) to ", stdout, re.MULTILINE)
    assert match, stdout[-2000:]
    return match.group(1)


@pytest.mark.slow
@pytest.mark.cluster
def test_smoke_runs_as_a_ray_job_and_follow_exits_with_its_status(head, tmp_path):
    env = clean_env(RAY_AUTH_TOKEN=head.token)  # the token as a user would hand it over
    started = time.monotonic()
    proc = run_submit(*submit_args(head, "+exp=smoke", "wandb.mode=disabled", f"hydra.run.dir={tmp_path}/run",
                                   "--follow"), env=env, timeout=600)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    job_id = job_id_of(proc.stdout)
    assert "done: smoke, 2 iterations" in proc.stdout
    assert proc.stdout.rstrip().endswith(f"job {job_id}: SUCCEEDED (Job finished successfully)")
    print(f"smoke as a Ray job, submitted and followed: {time.monotonic() - started:.0f} s")
    # the head runs on this machine, so an absolute run folder is here too
    assert (tmp_path / "run" / "summary.json").is_file()

    status = run_submit(*submit_args(head, "status", job_id), env=env)
    assert status.returncode == 0 and status.stdout.startswith(f"{job_id}: SUCCEEDED"), status.stdout
    assert "python launch/train.py +exp=smoke wandb.mode=disabled" in status.stdout
    logs = run_submit(*submit_args(head, "logs", job_id), env=env)
    assert logs.returncode == 0 and "done: smoke, 2 iterations" in logs.stdout

    # what the user can get wrong against a live cluster: each one line, status 2
    assert f"no job raysubmit_nope on the Ray cluster at {head.address}" in one_error_line(
        run_submit(*submit_args(head, "status", "raysubmit_nope"), env=env))
    assert "refused the token from cluster.token" in one_error_line(
        run_submit(*submit_args(head, "logs", job_id, f"cluster.token={'0' * 64}"), env=env))
    no_token = clean_env(HOME=str(tmp_path))  # no RAY_AUTH_TOKEN and no ~/.ray/auth_token
    assert "requires token authentication and no token was found" in one_error_line(
        run_submit(*submit_args(head, "stop", job_id), env=no_token))


@pytest.mark.slow
@pytest.mark.cluster
def test_stop_lets_training_save_a_checkpoint(head, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(head.token)
    cluster = [f"cluster.address={head.address}", f"cluster.token_file={token_file}"]
    run_dir = tmp_path / "run"
    proc = run_submit("+exp=smoke", "wandb.mode=disabled", "budget.iterations=1000", "eval.every=0",
                      f"hydra.run.dir={run_dir}", *cluster)
    assert proc.returncode == 0, proc.stderr[-3000:]
    job_id = job_id_of(proc.stdout)

    def status() -> str:
        return run_submit("status", job_id, *cluster).stdout.partition("\n")[0]

    deadline = time.monotonic() + 300
    while not list(run_dir.glob("checkpoints/iter_*")):  # training is under way
        assert re.search(r": (PENDING|RUNNING)", status()) and time.monotonic() < deadline, \
            run_submit("logs", job_id, *cluster).stdout[-3000:]
        time.sleep(1)
    stop = run_submit("stop", job_id, *cluster)
    assert stop.returncode == 0 and stop.stdout.startswith(f"stopping {job_id}"), stop.stdout + stop.stderr
    while re.search(r": (PENDING|RUNNING)", final := status()):
        assert time.monotonic() < deadline, final
        time.sleep(1)
    assert final.startswith(f"{job_id}: STOPPED"), final
    logs = run_submit("logs", job_id, *cluster).stdout
    assert re.search(r"stopped at iteration (\d+): saving a checkpoint", logs), logs[-3000:]
    assert f"resume with: python launch/train.py resume={run_dir}" in logs
    assert run_submit("stop", job_id, *cluster).stdout.startswith(f"{job_id} is not running: STOPPED")
