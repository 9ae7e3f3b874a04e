"""Check before you copy: a resume copied every file of a checkpoint before it compared them with the signature. A
``/dev/zero`` link filled the temporary folder, a FIFO hung the resume, a 1 GiB sparse file was copied whole, and
SIGTERM during the copy left it behind. Now the file list is compared with the signature and each file is opened
as a regular file of its signed size before a byte is written; policy folders are read through the same helper
(`policies.files`).

Each check runs in a child process whose files may not grow past `FILE_LIMIT` (``RLIMIT_FSIZE``: the kernel stops a
process that writes more, with SIGXFSZ), with a temporary folder of its own: a copy of what should be refused kills the child,
and what it leaves behind shows in that folder."""
from __future__ import annotations

import json
import os
import pickle
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from launch.training.runs import KEY_ENV, sign_checkpoint
from tests.security.helpers import ROOT, one_error_line

FILE_LIMIT = 64 << 20
GIB = 1 << 30

# Checks the checkpoint as a resume does before Ray starts, and prints what happened in one line.
CHECK = """
import signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # a write past FILE_LIMIT ends this process (Python ignores it)
from pathlib import Path
from launch.cli import UserError
from launch.training.runs import RunDir
checkpoint = Path(sys.argv[1])
try:
    copy = RunDir(checkpoint.parents[1]).check_algorithm_state(checkpoint)
except UserError as err:
    print("refused:", err)
except ValueError as err:
    print("damaged:", err)
else:
    import pickle
    print("copied:", pickle.loads((copy / "algorithm_state.pkl").read_bytes()))
"""


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


def child_env(key: Path, tmp: Path) -> dict:
    tmp.mkdir(exist_ok=True)
    return {**os.environ, KEY_ENV: str(key), "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}


@pytest.fixture
def signed(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A run folder with one signed checkpoint (RLlib's layout, plain dicts pickled) and the key that signed it."""
    key = tmp_path / "key"
    key.write_text("cd" * 32 + "\n")
    key.chmod(0o600)
    monkeypatch.setenv(KEY_ENV, str(key))
    checkpoint = tmp_path / "run" / "checkpoints" / "iter_000001"
    module = checkpoint / "algorithm" / "learner_group" / "learner" / "rl_module" / "main"
    module.mkdir(parents=True)
    (checkpoint / "algorithm" / "rllib_checkpoint.json").write_text(json.dumps({"type": "Algorithm"}))
    (checkpoint / "algorithm" / "algorithm_state.pkl").write_bytes(pickle.dumps({"iteration": 1}))
    (module / "module_state.pkl").write_bytes(pickle.dumps({"weights": [0.5] * 100}))
    (checkpoint / "run_state.json").write_text(json.dumps({"iteration": 1, "env_steps": 10}))
    (tmp_path / "run" / "overrides.txt").write_text("+exp=smoke\n")
    sign_checkpoint(checkpoint)
    return checkpoint, key


def check(checkpoint: Path, key: Path, tmp: Path) -> str:
    done = subprocess.run([sys.executable, "-c", CHECK, str(checkpoint)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=child_env(key, tmp), preexec_fn=limited, stdin=subprocess.DEVNULL,
                          check=False)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    return done.stdout.strip()


def test_a_signed_checkpoint_is_copied(signed, tmp_path):
    checkpoint, key = signed
    said = check(checkpoint, key, tmp_path / "tmp")
    assert said == "copied: {'iteration': 1}", said
    assert list((tmp_path / "tmp").iterdir()) == []  # removed at exit


@pytest.mark.parametrize("unlisted", [False, True])
def test_a_link_to_dev_zero_is_refused_with_nothing_written(signed, tmp_path, unlisted):
    checkpoint, key = signed
    file = checkpoint / "algorithm" / ("extra.pkl" if unlisted else "algorithm_state.pkl")
    file.unlink(missing_ok=True)
    file.symlink_to("/dev/zero")
    said = check(checkpoint, key, tmp_path / "tmp")
    assert said.startswith("refused: ") and "is a symbolic link" in said and "nothing of it was copied" in said, said
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_fifo_is_refused_at_once(signed, tmp_path):
    checkpoint, key = signed
    fifo = checkpoint / "algorithm" / "algorithm_state.pkl"
    fifo.unlink()
    os.mkfifo(fifo)
    said = check(checkpoint, key, tmp_path / "tmp")  # before: the open waited for a writer forever
    assert said.startswith("refused: ") and "is a FIFO" in said, said
    assert list((tmp_path / "tmp").iterdir()) == []


@pytest.mark.parametrize("unlisted", [False, True])
def test_a_sparse_gibibyte_is_refused_by_size_or_list_not_copied(signed, tmp_path, unlisted):
    checkpoint, key = signed
    file = checkpoint / "algorithm" / ("big.bin" if unlisted else "algorithm_state.pkl")
    with open(file, "wb") as f:
        f.truncate(GIB)
    said = check(checkpoint, key, tmp_path / "tmp")  # a copy of it would pass FILE_LIMIT and stop the child
    if unlisted:
        assert said.startswith("refused: ") and "algorithm/big.bin is not covered by its signature" in said, said
    else:
        assert said.startswith("damaged: ") and f"algorithm/algorithm_state.pkl is {GIB:,} bytes, signed at" in said
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_file_that_grew_past_its_signed_size_is_not_copied_past_it(signed, tmp_path):
    """Appended to after it was signed, yet of the signed size when opened: this cannot be arranged from outside
    without a race, so the copy itself is checked: it stops at the size it is given."""
    from policies.files import copy_regular, open_regular

    source = tmp_path / "grows"
    source.write_bytes(b"a" * 1000)
    fd = open_regular(source)
    try:
        digest = copy_regular(fd, tmp_path / "copy", 10)
    finally:
        os.close(fd)
    assert (tmp_path / "copy").read_bytes() == b"a" * 10
    import hashlib
    assert digest == hashlib.sha256(b"a" * 11).hexdigest() != hashlib.sha256(b"a" * 10).hexdigest()


# Sends this process SIGTERM from a thread once the copy's folder exists, while the main thread copies.
TERM_DURING_COPY = """
import os, signal, sys, tempfile, threading, time
from pathlib import Path
from launch.training.runs import RunDir
checkpoint = Path(sys.argv[1])
tmp = Path(tempfile.gettempdir())
def stop():
    while not any(tmp.glob("ludo-league-resume-*")):
        time.sleep(0.0005)
    os.kill(os.getpid(), signal.SIGTERM)
threading.Thread(target=stop, daemon=True).start()
RunDir(checkpoint.parents[1]).check_algorithm_state(checkpoint)
time.sleep(30)  # the signal reaches the main thread here at the latest
"""


def test_sigterm_during_the_copy_leaves_nothing_behind(signed, tmp_path):
    checkpoint, key = signed
    big = checkpoint / "algorithm" / "learner_group" / "big.bin"
    big.write_bytes(b"\1" * (48 << 20))  # long enough to copy that the signal comes while it is copied
    sign_checkpoint(checkpoint)
    done = subprocess.run([sys.executable, "-c", TERM_DURING_COPY, str(checkpoint)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=child_env(key, tmp_path / "tmp"), stdin=subprocess.DEVNULL,
                          check=False)
    assert done.returncode != 0, done.stderr[-3000:]
    assert list((tmp_path / "tmp").iterdir()) == [], done.stderr[-3000:]


def test_a_resume_refuses_a_dev_zero_link_in_one_line(signed, tmp_path):
    checkpoint, key = signed
    (checkpoint / "algorithm" / "extra.pkl").symlink_to("/dev/zero")
    run = checkpoint.parents[1]
    done = subprocess.run([sys.executable, "launch/train.py", f"resume={run}", "wandb.mode=disabled"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=child_env(key, tmp_path / "tmp"),
                          preexec_fn=limited, stdin=subprocess.DEVNULL, check=False)
    line = one_error_line(done)
    assert "algorithm/extra.pkl' is a symbolic link" in line and "nothing of it was copied" in line, line
    assert list((tmp_path / "tmp").iterdir()) == []


def test_signing_refuses_a_link(signed):
    """``resume_trust_unsigned=true`` signs what it vouches for: never a link (hashing /dev/zero never ends)."""
    from launch.cli import UserError

    checkpoint, _ = signed
    (checkpoint / "algorithm" / "extra.pkl").symlink_to("/dev/zero")
    with pytest.raises(UserError, match="is a symbolic link"):
        sign_checkpoint(checkpoint)


def linked_policy(tmp_path: Path) -> Path:
    """A policy folder whose policy.json is a link to a regular file elsewhere (a link is never followed)."""
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"format": "ludo-league-policy/1", "kind": "ppo", "model_config": {},
                                     "obs_dim": 1}))
    folder = tmp_path / "policy"
    folder.mkdir()
    (folder / "policy.json").symlink_to(elsewhere)
    (folder / "weights.pt").symlink_to(elsewhere)
    return folder


def test_a_policy_folder_reads_only_regular_files(tmp_path):
    """The same check for the folders every ``ckpt:`` player, export and league snapshot loads."""
    from policies.checkpoints import PolicyFileError, load_weights, read_meta

    folder = linked_policy(tmp_path)
    with pytest.raises(PolicyFileError, match="is a symbolic link, refused"):
        read_meta(folder)
    with pytest.raises(PolicyFileError, match="is a symbolic link, refused"):
        load_weights(folder)


def test_a_policy_folder_with_a_sparse_gibibyte_is_refused_by_size(tmp_path):
    from policies.checkpoints import PolicyFileError, load_weights, read_meta

    folder = tmp_path / "policy"
    folder.mkdir()
    for name, size in (("policy.json", GIB), ("weights.pt", 4 * GIB)):
        with open(folder / name, "wb") as f:
            f.truncate(size)
    with pytest.raises(PolicyFileError, match="bytes, more than the"):
        read_meta(folder)
    with pytest.raises(PolicyFileError, match="bytes, more than the"):
        load_weights(folder)


def test_export_of_a_linked_policy_is_one_line(tmp_path):
    folder = linked_policy(tmp_path)
    done = subprocess.run([sys.executable, "launch/export.py", f"ckpt={folder}", f"out={tmp_path / 'a.pt'}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert "is a symbolic link, refused" in one_error_line(done)


# Looks for the checkpoint to resume from, as `launch/train.py resume=` does first, and prints what it found.
RESUME_POINT = """
import sys
from launch.cli import UserError
from launch.training.runs import RunDir
try:
    state, checkpoint = RunDir(sys.argv[1]).resume_point(sys.argv[1], lambda checkpoint, state: None)
except UserError as err:
    print("refused:", err)
else:
    print("resumes:", checkpoint.name)
"""


def test_a_fifo_as_a_checkpoints_run_state_is_refused_not_waited_on(signed, tmp_path):
    checkpoint, key = signed
    fifo = checkpoint / "run_state.json"
    fifo.unlink()
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-c", RESUME_POINT, str(checkpoint.parents[1])], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=child_env(key, tmp_path / "tmp"),
                          stdin=subprocess.DEVNULL, check=False)  # before: the read waited for a writer forever
    said = done.stdout.strip()
    assert done.returncode == 0 and said.startswith("refused: ") and "run_state.json' is a FIFO" in said, \
        (said, done.stderr[-2000:])
