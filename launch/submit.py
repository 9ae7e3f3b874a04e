"""Run `launch/train.py` on a Ray cluster as a Ray job, and follow, inspect or stop it.

    python launch/submit.py +exp=dqn_selfplay resources=cluster_gpu cluster.address=http://HEAD:8265
    python launch/submit.py +exp=smoke --follow          # stream the logs; the exit status is the job's
    python launch/submit.py status <job_id>              # PENDING, RUNNING, SUCCEEDED, FAILED or STOPPED
    python launch/submit.py logs <job_id> [--follow]
    python launch/submit.py stop <job_id>

**Submitting.** Every argument that is not one of submit's own (below) is a
training override, passed unchanged to ``python launch/train.py`` on the
cluster. They are checked here first, by composing the training config and
running its schema checks (`launch.training.schema.check`), so a typo fails in one line
before anything is uploaded. What the cluster itself can grant is checked by
the job, at its start (`launch.training.build.check_resources`): a cluster too small
for ``resources.*`` fails the job with one line in its logs, never a job that
waits forever.

The job goes through Ray's Job Submission SDK
(`ray.job_submission.JobSubmissionClient`, which needs the ``cluster`` extra:
``pip install -e ".[cluster]"``). Its ``runtime_env`` carries this project as
the ``working_dir``: Ray zips it, uploads it to the head and puts it first on
the job's ``PYTHONPATH``, so the job runs this checkout's code even where an
older copy is installed. Left out of the upload (``runtime_env`` "excludes",
on top of ``.gitignore``, which Ray honours itself): ``.git``, the top-level
``outputs/``, ``multirun/`` and ``wandb/``, build and cache folders (see `ALWAYS_LEFT_OUT`),
and any file of `LARGE_FILE_BYTES` (10 MiB, the size Ray warns at) or more,
which is named on the terminal. The entrypoint's ``python`` is the one on
the PATH its node was started with, so start the head (and workers) in the
environment where the project is installed.

Where the run folder goes: the job's working directory is a temporary copy on
the node that runs the job (the head, unless ``cluster.entrypoint_num_gpus``
or ``_cpus`` send it elsewhere), so a relative ``hydra.run.dir`` (the
default, ``outputs/train/...``) lands there. Give
``hydra.run.dir=/shared/path`` to keep it; ``resume=`` and ``ckpt:`` paths
are paths on the cluster too.

``stop`` asks Ray to stop the job: Ray sends the training process SIGTERM,
on which training saves a checkpoint (as under SLURM), and kills it
`STOP_GRACE_S` seconds later if it has not ended (Ray's own default, 3 s, is
too short for a checkpoint; the job's ``RAY_JOB_STOP_WAIT_TIME_S`` sets it).

**Submit's own options**, kept apart from the training overrides:

==============================  ==================================================================
``cluster.address=URL``         the head's dashboard, ``http://HEAD:8265`` (not the GCS port 6379);
                                default ``RAY_API_SERVER_ADDRESS``, else ``http://127.0.0.1:8265``
``cluster.token=TOKEN``         the cluster's authentication token (see below)
``cluster.token_file=PATH``     a file holding it
``cluster.job_id=NAME``         the job's id (its submission id); Ray makes one up otherwise
``cluster.entrypoint_num_cpus`` CPUs reserved for the training driver (Ray's default: 0, on the head)
``cluster.entrypoint_num_gpus`` GPUs reserved for it: 1 puts the driver, and a learner trained in
                                the driver (``resources.learners=0``), on a GPU node
``--follow``                    after submitting (or with ``logs``): stream the logs until the job
                                ends; exit 0 when it SUCCEEDED, 1 when it FAILED or was STOPPED
``-h``, ``--help``              this text
==============================  ==================================================================

Ray's ``RAY_API_SERVER_ADDRESS`` and ``RAY_ADDRESS`` would override the
address the SDK is given; submit resolves the address itself and hides both
from the SDK. ``RAY_ADDRESS`` is not used as a default: it names the GCS
(``HOST:6379``), not the dashboard.

**Token authentication (Ray 2.60).** A cluster started with
``RAY_AUTH_MODE=token`` (or by ``ray start --head`` on a machine that holds a
token, which switches it on) answers the job API only to requests carrying
``Authorization: Bearer <token>``: 401 without a token, 403 with a wrong one.
Ray's own SDK sends that header only when the client's environment also has
``RAY_AUTH_MODE=token``; submit sends it whenever it finds a token, looking
where Ray's token loader looks, first found wins:

1. ``cluster.token=...`` (visible in the shell history and ``ps``: prefer the others);
2. ``cluster.token_file=PATH``;
3. ``RAY_AUTH_TOKEN`` in the environment;
4. the file named by ``RAY_AUTH_TOKEN_PATH``;
5. ``~/.ray/auth_token`` (written by ``ray get-auth-token --generate`` and by a local ``ray.init``).

``RAY_AUTH_MODE=disabled`` turns 3 to 5 off (an explicit token is still
sent). The token is the head's: ``ray get-auth-token`` prints it on the head
node; ``launch/slurm/train.sbatch`` makes one per job in ``RAY_AUTH_TOKEN``.

User errors (an unknown option or override, an address where no dashboard
answers, a refused or missing token, an unknown job id) print one line and
exit with status 2.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import logging
import math
import os
import shlex
import sys
import time
from collections.abc import Mapping
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

import launch  # noqa: E402, F401  (first after the script's sys.path: it refuses a Python other than 3.11)

# isort: split
from launch.cli import UserError, emit, fail, one_line  # noqa: E402  (after the version check above)

DEFAULT_ADDRESS = "http://127.0.0.1:8265"
SUBCOMMANDS = ("status", "logs", "stop")
# submit's own `cluster.<key>=value` options and how their values are read
CLUSTER_OPTIONS = {"address": str, "token": str, "token_file": str, "job_id": str,
                   "entrypoint_num_cpus": float, "entrypoint_num_gpus": float}
# Ray reads "excludes" as .gitignore lines relative to the working dir. A bare name matches a file or a
# folder of that name at any depth (caches); a leading "/" only at the top (run outputs: conf/wandb/ is
# config). A folder matched is not even walked, which matters for outputs/ and its runs.
ALWAYS_LEFT_OUT = (".git", "/outputs", "/multirun", "/wandb", "/.venv", "/build", "/dist", "__pycache__",
                   "*.pyc", "*.egg-info", ".pytest_cache", ".hypothesis", ".ruff_cache", ".mypy_cache",
                   ".benchmarks", ".ipynb_checkpoints")
LARGE_FILE_BYTES = 10 * 1024 * 1024
STOP_GRACE_S = 120  # SLURM's warning in launch/slurm/train.sbatch (--signal=B:TERM@120) gives the same


@dataclasses.dataclass
class Request:
    """One command line, parsed: what to do, with which options, and the training overrides."""

    command: str = "submit"  # submit, status, logs, stop or help
    job_id: str | None = None
    follow: bool = False
    overrides: list[str] = dataclasses.field(default_factory=list)
    address: str = DEFAULT_ADDRESS
    address_given: bool = False  # on the command line: the follow-up commands printed must repeat it
    token: str | None = None
    token_file: str | None = None
    submission_id: str | None = None
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None


# ---------------------------------------------------------------- arguments
def parse_args(argv: list[str], environ: Mapping[str, str] = os.environ) -> Request:
    """Split the command line into a sub-command, submit's own options and the training overrides."""
    req = Request(address=environ.get("RAY_API_SERVER_ADDRESS") or DEFAULT_ADDRESS)
    positional: list[str] = []
    for arg in argv:
        if arg in ("-h", "--help"):
            return Request(command="help")
        if arg == "--follow":
            req.follow = True
        elif arg.startswith("-"):
            raise UserError(f"unknown option {arg}: submit takes --follow and --help; training "
                            "overrides are key=value")
        elif arg.startswith("cluster."):
            key, eq, value = arg[len("cluster."):].partition("=")
            if key not in CLUSTER_OPTIONS:
                raise UserError(f"cluster.{key} is not an option of submit: choose one of "
                                f"{', '.join('cluster.' + k for k in CLUSTER_OPTIONS)}")
            if not eq or not value:
                raise UserError(f"cluster.{key} needs a value: cluster.{key}=...")
            _set_option(req, key, value)
        else:
            positional.append(arg)
    if positional and positional[0] in SUBCOMMANDS:
        req.command = positional[0]
        if len(positional) != 2:
            given = "no job id" if len(positional) == 1 else f"extra arguments {' '.join(positional[2:])}"
            raise UserError(f"{req.command} takes one job id and cluster.* options, got {given}: "
                            f"python launch/submit.py {req.command} <job_id>")
        req.job_id = positional[1]
        if req.follow and req.command != "logs":
            raise UserError(f"--follow goes with a submission or with logs, not with {req.command}")
    else:
        req.overrides = positional
    req.address = dashboard_url(req.address)  # a wrong kind of address fails before the config is composed
    return req


def _set_option(req: Request, key: str, value: str) -> None:
    if CLUSTER_OPTIONS[key] is float:
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not (math.isfinite(number) and number >= 0):
            raise UserError(f"cluster.{key}={value} is not allowed: give a number >= 0")
        setattr(req, key, number)
    elif key == "address":
        req.address, req.address_given = value, True
    elif key == "job_id":
        req.submission_id = value
    else:
        setattr(req, key, value)


def dashboard_url(address: str) -> str:
    """The dashboard's URL: an address without a scheme is HTTP, as Ray reads it; Ray Client's is refused."""
    address = address.strip().rstrip("/")
    if address.startswith("ray://"):
        raise UserError(f"cluster.address={address} is a Ray Client address: give the dashboard's, "
                        "http://HEAD:8265")
    return address if "://" in address else f"http://{address}"


# ---------------------------------------------------------------- token
def find_token(req: Request, environ: Mapping[str, str] = os.environ,
               home: Path | None = None) -> tuple[str | None, str]:
    """The token to send and where it came from (for messages), in the order the module docstring gives."""
    if req.token:
        return req.token.strip(), "cluster.token"
    if req.token_file:
        token = _read_token(Path(req.token_file).expanduser(), "cluster.token_file")
        return token, f"cluster.token_file={req.token_file}"
    if environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
        return None, "RAY_AUTH_MODE=disabled"
    if environ.get("RAY_AUTH_TOKEN", "").strip():
        return environ["RAY_AUTH_TOKEN"].strip(), "RAY_AUTH_TOKEN"
    if environ.get("RAY_AUTH_TOKEN_PATH"):
        path = environ["RAY_AUTH_TOKEN_PATH"]
        return _read_token(Path(path).expanduser(), "RAY_AUTH_TOKEN_PATH"), f"RAY_AUTH_TOKEN_PATH={path}"
    default = (home or Path.home()) / ".ray" / "auth_token"
    if default.is_file():
        token = default.read_text().strip()
        if token:
            return token, str(default)
    return None, "none found"


def _read_token(path: Path, option: str) -> str:
    try:
        token = path.read_text().strip()
    except OSError as err:
        raise UserError(f"{option}={path}: cannot read the token: {err.strerror or err}") from None
    if not token:
        raise UserError(f"{option}={path}: the file is empty")
    return token


def auth_headers(token: str | None) -> dict[str, str]:
    """The header Ray's dashboard checks (``ray._private.authentication``); an explicit one makes the SDK
    leave its own lookup alone."""
    return {"Authorization": f"Bearer {token}"} if token else {}


# ---------------------------------------------------------------- what is submitted
def validate(overrides: list[str]) -> None:
    """Compose the training config as launch/train.py will, and run its schema checks: one line on failure."""
    from omegaconf import OmegaConf

    from launch.cli import compose
    from launch.training.schema import check

    compose("config", overrides, return_hydra_config=True)  # hydra.* overrides and group choices
    # run_dir is the Hydra output folder, known only once Hydra runs: a stand-in lets the rest resolve
    cfg = compose("config", [*overrides, "run_dir=/submitted"])
    try:
        check(OmegaConf.to_object(cfg))
    except Exception as err:  # noqa: BLE001  a value the schema or the checks refuse
        raise UserError(one_line(err)) from None


def entrypoint(overrides: list[str]) -> str:
    """The job's shell command: the overrides quoted so that `players='[a,b]'` arrives as typed."""
    return shlex.join(["python", "launch/train.py", *overrides])


def left_out(root: Path) -> tuple[list[str], list[str]]:
    """Ray's "excludes" for the upload of `root`, and the large files among them (relative paths)."""
    anywhere = [p for p in ALWAYS_LEFT_OUT if not p.startswith("/")]
    top = [p[1:] for p in ALWAYS_LEFT_OUT if p.startswith("/")]

    def matched(folder: str, name: str) -> bool:
        patterns = [*anywhere, *top] if Path(folder) == root else anywhere
        return any(fnmatch(name, p) for p in patterns)

    large = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not matched(folder, d)]
        for name in files:
            path = Path(folder, name)
            if matched(folder, name):
                continue
            try:
                if path.stat().st_size >= LARGE_FILE_BYTES:
                    large.append(path.relative_to(root).as_posix())
            except OSError:  # a dangling link: Ray skips it too
                continue
    # a leading "/" anchors the pattern at the working dir; glob characters in names are escaped
    anchored = ["/" + "".join("\\" + c if c in "[]*?!#\\" else c for c in rel) for rel in sorted(large)]
    return [*ALWAYS_LEFT_OUT, *anchored], sorted(large)


def runtime_env(root: Path = ROOT) -> tuple[dict[str, Any], list[str]]:
    excludes, large = left_out(root)
    env = {"working_dir": str(root), "excludes": excludes,
           "env_vars": {"RAY_JOB_STOP_WAIT_TIME_S": str(STOP_GRACE_S)}}
    return env, large


# ---------------------------------------------------------------- talking to the cluster
class Cluster:
    """The job API of one Ray cluster, with every failure the user can fix turned into one line."""

    def __init__(self, req: Request, environ: Mapping[str, str] = os.environ):
        self.address = req.address
        self.token, self.token_source = find_token(req, environ)
        # follow-up commands printed for the user repeat an address given on the command line
        self.repeat = [f"cluster.address={self.address}"] if req.address_given else []
        # The SDK imports without these and fails later with a message about Ray's own extras.
        missing = [m for m in ("requests", "aiohttp") if importlib.util.find_spec(m) is None]
        if missing:
            raise UserError(f"Ray's job API needs {' and '.join(missing)}: pip install -e '.[cluster]'")
        from ray.job_submission import JobSubmissionClient

        # Ray's SDK would replace the address it is given by these (and RAY_ADDRESS names the GCS, not
        # the dashboard): the address resolved above is the one to use.
        for var in ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS"):
            os.environ.pop(var, None)
        logging.getLogger("ray").setLevel(logging.WARNING)  # its INFO lines repeat what submit prints
        self.client = self.call(JobSubmissionClient, self.address, headers=auth_headers(self.token))

    def call(self, fn, *args, job_id: str | None = None, **kwargs):
        """`fn(*args, **kwargs)` with the SDK's errors as one-line `UserError`s."""
        import requests
        from ray.exceptions import AuthenticationError

        try:
            return fn(*args, **kwargs)
        except AuthenticationError as err:
            raise UserError(self._auth_problem(str(err))) from None
        except (ConnectionError, requests.exceptions.ConnectionError, requests.exceptions.Timeout):
            raise UserError(f"no Ray dashboard answers at {self.address}: start the head with "
                            "`ray start --head --dashboard-host=0.0.0.0`, or check cluster.address (the "
                            "dashboard's port, 8265 by default, not the GCS port 6379)") from None
        except requests.exceptions.RequestException as err:
            raise UserError(f"cluster.address={self.address}: {one_line(err)}") from None
        except RuntimeError as err:
            text = str(err)
            if job_id is not None and "status code 404" in text:
                raise UserError(f"no job {job_id} on the Ray cluster at {self.address} "
                                f"(its jobs: {self.address}/#/jobs)") from None
            detail = text.split(": ", 1)[1] if text.startswith("Request failed with status code") else text
            raise UserError(f"the Ray cluster at {self.address}: {one_line(RuntimeError(detail))}") from None

    def _auth_problem(self, text: str) -> str:
        if text.startswith("Authentication failed"):  # 403: a token was sent and is not the cluster's
            return (f"the Ray cluster at {self.address} refused the token from {self.token_source}: give "
                    "the head's (`ray get-auth-token` on the head node prints it)")
        return (f"the Ray cluster at {self.address} requires token authentication and no token was found: "
                "set RAY_AUTH_TOKEN, or give cluster.token_file=PATH (the head's `ray get-auth-token` "
                "prints it)")

    def info(self, job_id: str):
        return self.call(self.client.get_job_info, job_id, job_id=job_id)

    def follow(self, job_id: str) -> int:
        """Stream the job's logs until it ends; 0 when it SUCCEEDED, 1 otherwise."""
        import asyncio

        import aiohttp

        self.info(job_id)  # an unknown id is one line here, not a websocket handshake error

        async def stream() -> None:
            async for chunk in self.client.tail_job_logs(job_id):
                sys.stdout.write(chunk)
                sys.stdout.flush()

        try:
            self.call(asyncio.run, stream(), job_id=job_id)
        except aiohttp.ClientError as err:  # the head went away while streaming
            raise UserError(f"lost the log stream of {job_id} at {self.address} ({one_line(err)}); the job "
                            f"may go on: {self.command('status', job_id)}") from None
        except KeyboardInterrupt:
            print(f"\nstopped following {job_id}; the job goes on (stop it with: "
                  f"{self.command('stop', job_id)})", file=sys.stderr)
            return 130
        # the stream closes as the job ends; its final status can be a moment behind
        deadline = time.monotonic() + 30
        info = self.info(job_id)
        while not info.status.is_terminal() and time.monotonic() < deadline:
            time.sleep(0.5)
            info = self.info(job_id)
        if not info.status.is_terminal():
            raise UserError(f"the log stream of {job_id} ended but the job is {info.status}: "
                            f"{self.command('status', job_id)}")
        print(f"job {job_id}: {status_line(info)}", flush=True)
        return 0 if str(info.status) == "SUCCEEDED" else 1

    def command(self, sub: str, job_id: str) -> str:
        """The follow-up command line, with the address when it was given on the command line."""
        return " ".join(["python launch/submit.py", sub, job_id, *self.repeat])


def status_line(info) -> str:
    message = (info.message or "").strip().splitlines()
    return str(info.status) + (f" ({message[0].rstrip('.')})" if message else "")


# ---------------------------------------------------------------- commands
def submit(req: Request, cluster: Cluster) -> int:
    env, large = runtime_env()
    job_id = cluster.call(cluster.client.submit_job, entrypoint=entrypoint(req.overrides), runtime_env=env,
                          submission_id=req.submission_id, entrypoint_num_cpus=req.entrypoint_num_cpus,
                          entrypoint_num_gpus=req.entrypoint_num_gpus)
    print(f"submitted {job_id} to {cluster.address}: {entrypoint(req.overrides)}")
    if large:
        print(f"left out of the upload ({LARGE_FILE_BYTES >> 20} MiB or more): {', '.join(large)}")
    # the run folder is hydra.run.dir, or the folder a resumed run writes into
    folders = [o.partition("=")[2] for o in req.overrides if o.startswith(("hydra.run.dir=", "resume="))]
    if not any(Path(folder).is_absolute() for folder in folders):
        print("run folder: in the job's temporary working directory, on the node that runs it; "
              "hydra.run.dir=/shared/path keeps it")
    print(f"  follow: {cluster.command('logs', job_id)} --follow")
    print(f"  status: {cluster.command('status', job_id)}")
    print(f"  stop:   {cluster.command('stop', job_id)}")
    print(f"  web:    {cluster.address}/#/jobs/{job_id}")
    if req.token:  # the secret is not echoed: say how the commands above find it
        print("  (they need the same token: give cluster.token again, or put it in RAY_AUTH_TOKEN)")
    sys.stdout.flush()
    return cluster.follow(job_id) if req.follow else 0


def main(argv: list[str] | None = None) -> int:
    req = parse_args(sys.argv[1:] if argv is None else argv)
    if req.command == "help":
        emit(__doc__)
        return 0
    if req.command == "submit":
        validate(req.overrides)  # before any network: a typo costs no upload
    cluster = Cluster(req)
    if req.command == "submit":
        return submit(req, cluster)
    job_id = req.job_id
    assert job_id is not None
    if req.command == "status":
        info = cluster.info(job_id)
        print(f"{job_id}: {status_line(info)}")
        print(f"  entrypoint: {info.entrypoint}")
        return 0
    if req.command == "logs":
        if req.follow:
            return cluster.follow(job_id)
        print(cluster.call(cluster.client.get_job_logs, job_id, job_id=job_id), end="", flush=True)
        return 0
    info = cluster.info(job_id)  # stop
    if info.status.is_terminal():
        print(f"{job_id} is not running: {status_line(info)}")
        return 0
    cluster.call(cluster.client.stop_job, job_id, job_id=job_id)
    print(f"stopping {job_id}: training gets SIGTERM, saves a checkpoint, and is killed if it has not "
          f"ended {STOP_GRACE_S} s later")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as err:
        fail(err)
    except KeyboardInterrupt:  # a job already submitted goes on: its id was printed first
        print("\ninterrupted", file=sys.stderr)
        sys.exit(130)
