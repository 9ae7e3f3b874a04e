"""Security 5 and 6, and the half-written and unclear ends of training: the signature was checked, then RLlib read
the files again (a file replaced in between ran); a signing key others could read was used; an empty key file
left a run folder behind; a resume without its key made a new one and said the checkpoint was not this user's;
``resume_trust_unsigned=true`` on a crafted run ended in a traceback; ``league.max_snapshots=1000000000`` filled
the memory; Ctrl-C on a run exited 0."""
from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from launch.training.runs import KEY_ENV, RunDir, sign_checkpoint
from tests.launch.configs import script_env
from tests.security.helpers import ROOT, one_error_line
from tests.untrusted import crafted_pickle, crafted_run_folder

ARGS = ("+exp=smoke", "budget.iterations=1", "eval.every=0", "eval.final_games=0", "wandb.mode=disabled")


def train(key: Path, *args: str, timeout: int = 400, driver: str | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "launch/train.py", *args] if driver is None else \
        [sys.executable, "-c", driver, *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**script_env(), KEY_ENV: str(key), "PYTHONPATH": str(ROOT)}, stdin=subprocess.DEVNULL,
                          check=False)


def new_key(path: Path, mode: int = 0o600, text: str = "ab" * 32) -> Path:
    path.write_text(text + "\n")
    path.chmod(mode)
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, Path]:
    """A one-iteration smoke run and the key that signed it."""
    folder = tmp_path_factory.mktemp("trained")
    key = new_key(folder / "key")
    done = train(key, *ARGS, f"hydra.run.dir={folder / 'run'}")
    assert done.returncode == 0, done.stderr[-3000:]
    return folder / "run", key


# Replaces the checkpoint's algorithm state with a crafted pickle once Ray starts: after the signature was checked,
# before RLlib restores (what someone with write access to the run folder can do).
SWAP_AFTER_CHECK = """
import runpy, sys
from pathlib import Path
import ray
payload, target = Path(sys.argv[-2]), Path(sys.argv[-1])
real_init = ray.init
def init(*args, **kwargs):
    target.write_bytes(payload.read_bytes())
    print("swapped the checked algorithm state", flush=True)
    return real_init(*args, **kwargs)
ray.init = init
sys.argv = ["launch/train.py"] + sys.argv[1:-2]
runpy.run_path("launch/train.py", run_name="__main__")
"""


def test_resume_restores_only_the_bytes_it_checked(trained, tmp_path):
    run, key = trained
    copy = Path(shutil.copytree(run, tmp_path / "run"))
    marker = tmp_path / "pwned"
    payload = tmp_path / "payload.pkl"
    payload.write_bytes(crafted_pickle(marker))
    [checkpoint] = RunDir(copy).checkpoint_dirs()
    target = checkpoint / "algorithm" / "algorithm_state.pkl"
    done = train(key, f"resume={copy}", "budget.iterations=2", str(payload), str(target), driver=SWAP_AFTER_CHECK)
    assert "swapped the checked algorithm state" in done.stdout, done.stderr[-3000:]
    assert not marker.exists(), "RLlib read the replaced file: the payload ran"
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_key_file_others_can_read_is_refused_in_one_line(tmp_path):
    key = new_key(tmp_path / "key", mode=0o644)
    done = train(key, *ARGS, f"hydra.run.dir={tmp_path / 'run'}")
    assert "may be read by others (mode 0644)" in one_error_line(done) and "chmod 600" in done.stderr
    assert not (tmp_path / "run").exists()


def test_an_empty_key_file_leaves_no_run_folder(tmp_path):
    key = new_key(tmp_path / "key", text="")
    done = train(key, *ARGS, f"hydra.run.dir={tmp_path / 'run'}")
    assert "is damaged" in one_error_line(done)
    assert not (tmp_path / "run").exists()


def test_a_resume_without_its_key_makes_none_and_says_there_is_none(tmp_path, monkeypatch):
    marker = tmp_path / "pwned"
    run = crafted_run_folder(tmp_path / "run", marker, ARGS)
    monkeypatch.setenv(KEY_ENV, str(new_key(tmp_path / "signing-key")))
    sign_checkpoint(RunDir(run).checkpoint_dirs()[0])  # signed with a key this machine no longer has
    missing = tmp_path / "gone" / "key"
    line = one_error_line(train(missing, f"resume={run}", "wandb.mode=disabled"))
    assert f"this machine has no signing key at {missing}" in line and "not written by this user" not in line
    assert not missing.exists() and not missing.parent.exists() and not marker.exists()


def test_trusting_a_crafted_run_ends_in_one_line(trained, tmp_path):
    """``resume_trust_unsigned=true`` vouches for the run, so its pickles are read (and run, as documented); what
    they hold is no RLlib state, which is said in one line, not a traceback from deep in RLlib."""
    run, key = trained
    copy = Path(shutil.copytree(run, tmp_path / "run"))
    marker = tmp_path / "pwned"
    [checkpoint] = RunDir(copy).checkpoint_dirs()
    (checkpoint / "signature.json").unlink()
    for pickle_file in (checkpoint / "algorithm").rglob("*.pkl"):
        pickle_file.write_bytes(crafted_pickle(marker))
    done = train(key, f"resume={copy}", "resume_trust_unsigned=true", "wandb.mode=disabled")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert lines[-1].startswith("error: ") and "is not RLlib state" in lines[-1], lines[-1]
    assert all(line.startswith(("note: ", "warning: ", "error: ")) for line in lines), done.stderr[-3000:]


def test_max_snapshots_has_an_upper_bound(tmp_path):
    done = subprocess.run([sys.executable, "launch/train.py", *ARGS, "league=alphastar", "league.max_snapshots=1000",
                           f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**script_env(), KEY_ENV: str(new_key(tmp_path / "key"))},
                          stdin=subprocess.DEVNULL, check=False)
    assert "league.max_snapshots=1000 is not allowed" in one_error_line(done)
    assert not (tmp_path / "run").exists()


def test_ctrl_c_on_a_training_run_saves_and_exits_130(tmp_path):
    proc = subprocess.Popen([sys.executable, "launch/train.py", "+exp=smoke", "budget.iterations=1000",
                             "eval.every=0", "wandb.mode=disabled", f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**script_env(), KEY_ENV: str(new_key(tmp_path / "key"))})
    try:
        for line in proc.stdout:
            if line.startswith("it "):  # training runs
                break
        else:
            raise AssertionError(f"the run ended before its first iteration: {proc.stderr.read()[-3000:]}")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (proc.returncode, out[-2000:], err[-3000:])
    assert "resume with: python launch/train.py resume=" in out and RunDir(tmp_path / "run").checkpoint_dirs()
