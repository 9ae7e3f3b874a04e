"""``launch/train.py resume=``: it reads only pickles this user's runs signed, it writes into the folder
it was pointed at, it refuses what would change main, and a damaged ``config.yaml`` is one line.

One small PPO run is trained once (signed with a key of this test module's own, `launch.training.runs.KEY_ENV`);
each test
resumes a copy of it, as a user resumes a run folder.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launch.cli import UserError
from launch.training.runs import (
    KEY_ENV,
    SIGNATURE,
    CheckpointNotTrusted,
    RunDir,
    checkpoint_key,
    sign_checkpoint,
    verify_checkpoint,
)
from policies.league.league import member_policy_folder
from policies.league.store import LeagueStore
from tests.launch.configs import metrics, script_env, train_config
from tests.untrusted import crafted_pickle, crafted_run_folder

ROOT = Path(__file__).resolve().parents[2]
ARGS = ("+exp=smoke", "budget.iterations=2", "eval.every=0", "eval.final_games=0", "wandb.mode=disabled")


def train(key: Path, *args: str, timeout: int = 400) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "launch/train.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**script_env(), KEY_ENV: str(key)}, stdin=subprocess.DEVNULL,
                          check=False)


def one_line(done: subprocess.CompletedProcess, *fragments: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (done.returncode, done.stdout[-2000:], done.stderr[-3000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-3000:]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def key(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("key") / "checkpoint-key"


@pytest.fixture(scope="module")
def trained(tmp_path_factory, key) -> Path:
    run = tmp_path_factory.mktemp("trained") / "run"
    done = train(key, *ARGS, f"hydra.run.dir={run}")
    assert done.returncode == 0, done.stderr[-3000:]
    return run


@pytest.fixture
def copy_of(trained, tmp_path):
    def copy(name: str) -> Path:
        return Path(shutil.copytree(trained, tmp_path / name))
    return copy


def files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_training_signs_every_checkpoint_with_the_users_key(trained, key, monkeypatch):
    monkeypatch.setenv(KEY_ENV, str(key))
    checkpoints = RunDir(trained).checkpoint_dirs()
    assert [c.name for c in checkpoints] == ["iter_000001", "iter_000002"]
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    for checkpoint in checkpoints:
        signature = json.loads((checkpoint / SIGNATURE).read_text())
        assert "algorithm/algorithm_state.pkl" in signature["files"]
        verify_checkpoint(checkpoint)
    monkeypatch.setenv(KEY_ENV, str(trained.parent / "another-key"))  # another user's key
    with pytest.raises(CheckpointNotTrusted, match="this machine has no signing key at "):
        verify_checkpoint(checkpoints[-1])
    checkpoint_key()
    with pytest.raises(CheckpointNotTrusted, match="its signature is not this user's key's"):
        verify_checkpoint(checkpoints[-1])


def test_a_copied_run_folder_resumes_into_the_copy_with_its_own_league(copy_of, key):
    original, copy = copy_of("A"), copy_of("B")
    # What a run started with run_dir=A saved: its run_dir override, which the copy B carries.
    overrides = copy / "overrides.txt"
    overrides.write_text(overrides.read_text() + f"run_dir={original}\n")
    before = files(original)

    done = train(key, f"resume={copy}", "budget.iterations=3")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"run folder: {copy}  (resumed from iter_000002" in done.stdout
    assert files(original) == before, "the resume wrote into the folder the run was copied from"
    assert (copy / "checkpoints" / "iter_000003" / SIGNATURE).is_file()
    assert [m["iteration"] for m in metrics(copy)] == [1, 2, 3]
    # The league's snapshot rows point into the copy (relative to its league.db), the new one included.
    with LeagueStore.open(copy, create=False, read_only=True) as store:
        snapshots = store.members(kinds=["snapshot"])
        assert 3 in {m.iteration for m in snapshots}
        for member in snapshots:
            folder = member_policy_folder(member, copy)
            assert folder.resolve().is_relative_to(copy.resolve()) and (folder / "policy.json").is_file()

    # Told to write elsewhere on the command line: one line, nothing written there.
    elsewhere = copy.parent / "C"
    one_line(train(key, f"resume={copy}", f"run_dir={elsewhere}"), f"resume={copy}: a resume writes into the run "
             f"it resumes, and run_dir={elsewhere} names another folder")
    assert not elsewhere.exists()


@pytest.mark.slow
def test_a_run_folder_from_before_signatures_resumes_only_when_trusted_and_is_signed_then(copy_of, key, monkeypatch):
    old = copy_of("old")
    for checkpoint in RunDir(old).checkpoint_dirs():  # what a run folder written before this change holds
        (checkpoint / SIGNATURE).unlink()
    line = one_line(train(key, f"resume={old}", "budget.iterations=3"),
                    f"resume: checkpoint '{old / 'checkpoints' / 'iter_000002'}' was not written by this user's runs "
                    "(no signature.json); resume refuses pickles from elsewhere", "resume_trust_unsigned=true")
    assert f"ckpt:{old / 'checkpoints' / 'iter_000002' / 'policy'}" in line
    assert not (old / "checkpoints" / "iter_000003").exists()

    done = train(key, f"resume={old}", "budget.iterations=3", "resume_trust_unsigned=true")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resumed from iter_000002" in done.stdout
    assert "note: resume_trust_unsigned=true:" in done.stderr and "is now signed with this user's key" in done.stderr
    monkeypatch.setenv(KEY_ENV, str(key))
    for name in ("iter_000002", "iter_000003"):
        verify_checkpoint(old / "checkpoints" / name)  # signed now: later resumes need no override


def test_a_crafted_pickle_in_a_run_folder_is_never_read(copy_of, key, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, str(key))
    from launch.training.trainers.rllib import find_resume_point

    marker = tmp_path / "pwned"

    def resume(folder: Path):
        cfg = train_config(*ARGS, f"resume={folder}")
        return find_resume_point(cfg, RunDir(folder))

    # A signed checkpoint whose pickle was replaced since: damaged, so the resume falls back without reading it.
    tampered = copy_of("tampered")
    newest = tampered / "checkpoints" / "iter_000002" / "algorithm"
    (newest / "algorithm_state.pkl").write_bytes(crafted_pickle(marker))
    state, checkpoint = resume(tampered)
    assert checkpoint.name == "iter_000001" and state.iteration == 1 and not marker.exists()

    # A pickle the signature does not cover, beside signed ones: refused, not fallen back from.
    extra = copy_of("extra")
    (extra / "checkpoints" / "iter_000002" / "algorithm" / "extra.pkl").write_bytes(crafted_pickle(marker))
    with pytest.raises(CheckpointNotTrusted, match=r"algorithm/extra.pkl is not covered by its signature"):
        resume(extra)

    # Signed with someone else's key, or a signature made up: refused.
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "someone-else"))
    elsewhere = crafted_run_folder(tmp_path / "elsewhere", marker, ARGS)
    shutil.copytree(tampered / "checkpoints" / "iter_000001" / "policy",
                    elsewhere / "checkpoints" / "iter_000001" / "policy")
    sign_checkpoint(elsewhere / "checkpoints" / "iter_000001")
    monkeypatch.setenv(KEY_ENV, str(key))
    with pytest.raises(CheckpointNotTrusted, match="its signature is not this user's key's"):
        resume(elsewhere)
    forged = crafted_run_folder(tmp_path / "forged", marker, ARGS)
    (forged / "checkpoints" / "iter_000001" / SIGNATURE).write_text(json.dumps(
        {"format": "ludo-league-checkpoint-signature/1", "files": {}, "hmac": "00" * 32}))
    with pytest.raises(CheckpointNotTrusted, match="was not written by this user's runs"):
        resume(forged)
    assert not marker.exists()


@pytest.mark.parametrize("override,says", [
    ("network=token_set", "resume: network=token_set changes the run's main (built with network.kind=mlp"),
    ("obs=afterstates", "resume: obs=afterstates changes the run's main (built with obs=egocentric"),
    ("algo=dqn", "resume: the run trains ppo and this config gives algo=dqn"),
])
def test_an_override_that_changes_mains_network_is_refused_in_one_line(copy_of, key, override, says):
    run = copy_of("run")
    one_line(train(key, f"resume={run}", override, "budget.iterations=3"), says)
    assert not (run / "checkpoints" / "iter_000003").exists()


@pytest.mark.parametrize("text,says", [
    ("name: smoke\nalgo: [unclosed\n", "is not the run's YAML config (expected ',' or ']', but got"),
    ("- a list\n- not a mapping\n", "is not the run's YAML config (a list, not a mapping)"),
])
def test_a_config_yaml_that_is_not_yaml_is_one_line(copy_of, key, text, says):
    run = copy_of("run")
    (run / "config.yaml").write_text(text)
    one_line(train(key, f"resume={run}"), f"error: resume={run}: '{run / 'config.yaml'}' {says}")


def test_the_key_is_made_once_with_mode_0600_where_the_environment_says(tmp_path, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    key = checkpoint_key()
    file = tmp_path / "config" / "ludo-league" / "checkpoint-key"
    assert file.is_file() and oct(file.stat().st_mode & 0o777) == "0o600" and len(key) == 32
    assert checkpoint_key() == key
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "elsewhere" / "key"))
    assert checkpoint_key() != key and (tmp_path / "elsewhere" / "key").is_file()
    (tmp_path / "elsewhere" / "key").write_text("not hex\n")
    with pytest.raises(UserError, match="is damaged"):
        checkpoint_key()
    assert os.environ[KEY_ENV].endswith("key")
