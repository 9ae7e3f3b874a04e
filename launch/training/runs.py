"""A training run's folder: atomic checkpoints, the run state that resumes them, and the saved overrides;
and the pieces every trainer's loop shares (SIGTERM save, budget, wandb, progress suffix), so no trainer
imports the ``launch/train.py`` script.

Layout of ``<run_dir>`` (the Hydra output folder):

```text
overrides.txt            the command-line overrides of the first start (a resume reuses them)
config.yaml              the whole config of the first start (a resume keeps its settings: `keep_run_settings`)
checkpoints/iter_000010/ one checkpoint: algorithm/ (RLlib), policy/ (policies.checkpoints),
                         run_state.json (iteration, env steps, minutes, evaluations),
                         signature.json (this user's HMAC over algorithm/: `sign_checkpoint`)
best/                    the best-evaluated policy so far: policy/ and selection.json (which
                         evaluation chose it, `panel_score`); not rolled back on a resume
metrics.jsonl            one line per iteration
league.db                the league (policies.league.store): members, matches, rating history
league/<snapshot>/       each snapshot's weights (policies.checkpoints policy folder)
leaderboard.html         the dashboard (python launch/leaderboard.py league=<run_dir>)
summary.json             the final results
wandb/                   the wandb run
```

A checkpoint is written into a hidden temporary folder, flushed to the disk
and renamed into place, so ``iter_*`` folders are always complete; a run
killed while saving leaves only a temporary folder, which the next save
removes, and a save that fails (a full disk) removes its own. The RLlib
trainer writes its checkpoints in a thread, from a copy of the state taken
between two iterations (`launch.training.upkeep`). The league
database commits each change as it happens and is not rolled back on a
resume: snapshots frozen after the last checkpoint stay in the league.

Signed checkpoints
------------------
RLlib's algorithm state (``algorithm/``) is pickles, and unpickling runs
whatever code a pickle names: a resume must never read one the user's own runs
did not write (a run folder copied from someone else). Every checkpoint is
signed as it is written (`sign_checkpoint`): ``signature.json`` lists the
SHA-256 and size of every file under ``algorithm/`` and an HMAC-SHA256 over that list
with a per-user secret key, ``$XDG_CONFIG_HOME/ludo-league/checkpoint-key``
(``~/.config/...``; `KEY_ENV` names another file, e.g. on a cluster's shared
home or in tests), created with mode 0600 on first use. On a Ray cluster the
driver writes the checkpoints, so the key on the driver's machine signs them.
A key file that others may read, or that another user owns, is refused in one
line, as ssh refuses such a private key: whoever reads it can sign
checkpoints this user's resume would then unpickle. A resume never makes a
key: without one it says so, and names the file it looked for.

Before any pickle of a checkpoint is read, `verified_copy` checks it: no
signature, another key's, or files the signature does not cover is one line
(`CheckpointNotTrusted`); a signed file whose contents changed since (a
damaged disk, a truncated copy) makes the checkpoint damaged, and a resume
falls back to the one before without reading it. The check and the read are
one: each file is copied into a private folder of this user's while its
digest is taken, and the resume (the pickles' load check and RLlib's restore)
reads only that copy, so a file replaced in the run folder after the check is
never read. Nothing is copied before the folder's files are the signature's list,
each a regular file (opened without following a link or waiting on a FIFO,
`policies.files`) of its signed size; each copy stops at that size. A link, a
FIFO or a device under ``algorithm/`` is `CheckpointRefused` in one line, signed
or not, and an unlisted file is `CheckpointNotTrusted`: either way nothing is
written. A failure, Ctrl-C or SIGTERM during the copy removes it. Signatures
written before sizes were signed (``.../1``) are still checked: each file is
hashed where it is before any byte of it is copied. A run folder written
before checkpoints were signed resumes only with ``resume_trust_unsigned=true``, which signs the checkpoint it resumes
from with this user's key.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import signal
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import OmegaConf

from launch.cli import CONF_DIR, UserError, read_jsonl, write_text
from policies.checkpoints import CHECKPOINT_PREFIX, CHECKPOINTS_DIR, POLICY_DIR
from policies.files import (
    FileRefused,
    copy_regular,
    open_regular,
    read_regular,
    regular_files,
    sha256_regular,
)
from policies.json_data import read_json

if TYPE_CHECKING:
    from launch.training.schema import TrainConfig

RUN_STATE = "run_state.json"
ALGORITHM_DIR = "algorithm"
OVERRIDES = "overrides.txt"
CONFIG = "config.yaml"
# Sections a resume takes from today's command line and machine, never from the first start: where the run
# lives, the machine's resources, how it is tracked and printed.
MACHINE_SECTIONS = ("resume", "resume_trust_unsigned", "run_dir", "resources", "wandb", "progress")
SIGNATURE = "signature.json"
SIGNATURE_FORMAT = "ludo-league-checkpoint-signature/2"
SIGNATURE_FORMAT_V1 = "ludo-league-checkpoint-signature/1"
"""Signatures written before each file's size was signed: still checked, each file hashed in place before a copy."""
SIGNATURE_MAX_BYTES = 16 << 20
KEY_ENV = "LUDO_LEAGUE_CHECKPOINT_KEY"
"""An environment variable naming the key file that signs checkpoints, instead of `default_key_file`."""
METRICS = "metrics.jsonl"
SUMMARY = "summary.json"
BEST_DIR = "best"
SELECTION = "selection.json"
SCORE_BY = "mean win rate over eval.panel"


@dataclass
class RunState:
    """Counters the loop keeps across a resume."""

    iteration: int = 0
    env_steps: int = 0
    elapsed_s: float = 0.0
    """Training seconds so far, over every start of the run."""
    snapshot_slots: int | None = None
    """league.max_snapshots of the run: the snapshot modules its algorithm checkpoints hold."""
    last_snapshot: int | None = None
    """Iteration of main's newest snapshot."""
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    wandb_id: str | None = None
    exploiters: dict[str, dict[str, int]] = field(default_factory=dict)
    """Each exploiter's progress since its last reset (`policies.league.league.ExploiterProgress` fields), by
    module id; its keys are the exploiter modules the run's algorithm checkpoints hold."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        return cls(**data)


class RunDir:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.checkpoints = self.path / CHECKPOINTS_DIR
        self.verified: dict[Path, Path] = {}
        """Checkpoint -> the private copy of its RLlib state that `check_algorithm_state` verified: what a resume
        restores from."""

    def checkpoint_dirs(self) -> list[Path]:
        """Complete checkpoints, oldest first."""
        if not self.checkpoints.is_dir():
            return []
        return sorted(p for p in self.checkpoints.glob(f"{CHECKPOINT_PREFIX}*") if p.is_dir())

    def checkpoint_folder(self, iteration: int) -> Path:
        """Where the checkpoint of `iteration` is once complete."""
        return self.checkpoints / f"{CHECKPOINT_PREFIX}{iteration:06d}"

    def save_checkpoint(self, iteration: int, run_state: RunState, write_parts, keep: int) -> Path:
        """Write a checkpoint: ``write_parts(folder)`` fills algorithm/ and policy/, then the run state and the
        signature, every file flushed to the disk, then a rename. A write that fails (a full disk) removes what it
        wrote and leaves the checkpoints before it as they were. One checkpoint is written at a time: a
        temporary folder of another save, a killed one's, is removed first."""
        self.checkpoints.mkdir(parents=True, exist_ok=True)
        for stale in self.checkpoints.glob(".tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        final = self.checkpoint_folder(iteration)
        tmp = self.checkpoints / f".tmp-{final.name}-{os.getpid()}"
        try:
            write_parts(tmp)
            write_json(tmp / RUN_STATE, run_state.to_dict())
            if self.algorithm_of(tmp).is_dir():  # RLlib's pickles: signed, so that a resume can tell they are ours
                sign_checkpoint(tmp)
            _fsync_tree(tmp)  # a full disk shows at the latest here, before the rename, not in a later read
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if final.exists():  # the same iteration saved twice (a resume that stopped at once)
            shutil.rmtree(final)
        os.rename(tmp, final)
        _fsync_dir(self.checkpoints)
        for old in self.checkpoint_dirs()[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
        return final

    def resume_point(self, resume: str, check) -> tuple[RunState, Path]:
        """The newest checkpoint whose run state reads back and that ``check(checkpoint, state)`` accepts.

        A checkpoint that fails (any exception but `launch.cli.UserError`, which means the user must change
        something) is skipped with a warning naming what is wrong; none left is one line for the user.
        """
        import sys

        from launch.cli import UserError, one_line

        if not self.path.is_dir():
            raise UserError(f"resume={resume}: no such run folder")
        checkpoints = self.checkpoint_dirs()
        if not checkpoints:
            raise UserError(f"resume={resume}: the run has no checkpoint to resume from")
        problems = []
        for checkpoint in reversed(checkpoints):
            try:
                state = self.read_state(checkpoint)
                check(checkpoint, state)
            except UserError:
                self.forget_verified()
                raise
            except Exception as err:  # noqa: BLE001  any unreadable part: fall back to the one before
                self.forget_verified()
                problems.append(f"{checkpoint.name} is damaged ({one_line(err)})")
                continue
            for problem in problems:
                print(f"warning: {problem}; resuming from the older {checkpoint.name}", file=sys.stderr)
            return state, checkpoint
        raise UserError(f"resume={resume}: no checkpoint loads: {'; '.join(problems)}")

    def forget_verified(self) -> None:
        """Remove the verified copies (`verified`): once restored, or when their checkpoint is not resumed."""
        for copy in self.verified.values():
            shutil.rmtree(copy, ignore_errors=True)
        self.verified.clear()

    @staticmethod
    def read_state(checkpoint: Path) -> RunState:
        """The checkpoint's run state; JSON that is malformed or nested too deep is a ValueError of one line."""
        return RunState.from_dict(read_json(_run_text(checkpoint / RUN_STATE)))

    def save_overrides(self, overrides: list[str]) -> None:
        write_text(self.path / OVERRIDES, "".join(f"{o}\n" for o in overrides))

    def saved_overrides(self) -> list[str] | None:
        file = self.path / OVERRIDES
        if not (file.is_file() or file.is_symlink()):
            return None
        try:
            return _run_text(file).splitlines()
        except (OSError, ValueError) as err:
            raise UserError(f"resume={self.path}: its {OVERRIDES} cannot be read ({err})") from None

    def save_config(self, cfg: TrainConfig) -> None:
        write_text(self.path / CONFIG, OmegaConf.to_yaml(OmegaConf.structured(cfg)))

    def saved_config(self) -> dict[str, Any] | None:
        """The first start's whole config, None for a run started before runs saved it; a file that is not a
        YAML mapping is a `UserError` of one line."""
        file = self.path / CONFIG
        if not (file.is_file() or file.is_symlink()):
            return None
        try:
            config = OmegaConf.to_container(OmegaConf.create(_run_text(file)))
        except Exception as err:  # noqa: BLE001  yaml's scanner and parser errors, OmegaConf's own, an unreadable file
            raise UserError(f"resume={self.path}: '{file}' is not the run's YAML config ({_yaml_problem(err)}): "
                            f"restore it, or delete it to resume with today's defaults") from None
        if not isinstance(config, dict):
            raise UserError(f"resume={self.path}: '{file}' is not the run's YAML config (a "
                            f"{type(config).__name__}, not a mapping): restore it, or delete it to resume with "
                            "today's defaults")
        return config  # type: ignore[return-value]

    def append_metrics(self, row: dict[str, Any]) -> None:
        with open(self.path / METRICS, "a") as f:
            f.write(json.dumps(row) + "\n")

    def drop_metrics_from(self, iteration: int) -> None:
        """Drop the metrics rows of `iteration` and later: a resumed run plays those iterations again."""
        file = self.path / METRICS
        if file.is_file():
            rows = [line for line in file.read_text().splitlines() if line.strip()]
            kept = [line for line in rows if json.loads(line)["iteration"] < iteration]
            if len(kept) < len(rows):
                write_text(file, "".join(f"{line}\n" for line in kept))

    def check_algorithm_state(self, checkpoint: Path, trust_unsigned: bool = False) -> Path:
        """The checkpoint's RLlib state, this user's own, as a verified private copy that reads back: what a
        resume restores from (`verified_copy`, kept in `verified` until `forget_verified`, and removed at exit).

        A checkpoint not written by this user's runs is `CheckpointNotTrusted` (a `UserError`: nothing of it is
        read), unless `trust_unsigned` (``resume_trust_unsigned=true``), which signs it now; a signed file changed
        since is `ValueError` (damaged). Only then is every pickle of the copy loaded, this user's own, so a class
        that is gone is found before Ray starts; `ValueError` naming the first that does not load. A file that is
        no regular file is `CheckpointRefused`, signed or not."""
        with _stop_raises():  # a copy made, then a SIGTERM: the copy is removed, not left behind
            return self._checked_copy(checkpoint, trust_unsigned)

    def _checked_copy(self, checkpoint: Path, trust_unsigned: bool) -> Path:
        import pickle

        folder = self.algorithm_of(checkpoint)
        if not (folder / "rllib_checkpoint.json").is_file():
            raise ValueError("its algorithm/ folder is incomplete")
        try:
            copy = verified_copy(checkpoint)
        except CheckpointNotTrusted as err:
            if not trust_unsigned:
                raise
            import sys

            sign_checkpoint(checkpoint)
            print(f"note: resume_trust_unsigned=true: {checkpoint} ({err.reason}) is now signed with this user's "
                  f"key ({key_file()}) as you vouched for it", file=sys.stderr, flush=True)
            copy = verified_copy(checkpoint)
        try:
            for file in sorted(copy.rglob("*.pkl")):
                try:
                    with open(file, "rb") as f:
                        state = pickle.load(f)
                except Exception as err:  # noqa: BLE001  any way a pickle fails: truncated, garbage, a class gone
                    raise ValueError(f"{ALGORITHM_DIR}/{file.relative_to(copy)} does not load: "
                                     f"{type(err).__name__}: {str(err)[:80]}") from None
                if not isinstance(state, dict):  # every state file RLlib writes holds a dict
                    raise ValueError(f"{ALGORITHM_DIR}/{file.relative_to(copy)} is not RLlib state (a "
                                     f"{type(state).__name__}, not a dict)")
        except BaseException:
            shutil.rmtree(copy, ignore_errors=True)
            raise
        import atexit

        atexit.register(shutil.rmtree, copy, True)  # a run stopped before it restored leaves no copy behind
        self.verified[checkpoint] = copy
        return copy

    def policy_of(self, checkpoint: Path) -> Path:
        return checkpoint / POLICY_DIR

    @property
    def best(self) -> Path:
        return self.path / BEST_DIR

    def best_selection(self) -> dict[str, Any] | None:
        """The record of the policy in best/ (iteration, env steps, score, the evaluation that chose it), or None
        when the run has none yet. A kill between the two renames of `save_best` leaves no best/ but the previous
        one under ``.best-old-*``: it is put back first."""
        if not self.best.is_dir():
            for old in sorted(self.path.glob(".best-old-*")):
                if (old / SELECTION).is_file() and self.policy_of(old).is_dir():
                    os.rename(old, self.best)
                    break
        try:
            return read_json(_run_text(self.best / SELECTION))
        except (OSError, ValueError):
            return None

    def save_best(self, selection: dict[str, Any], write_policy) -> Path:
        """Make ``write_policy(folder)``'s policy, with its `selection` record, the run's best/: both go into a
        temporary folder that replaces best/ by two renames (`best_selection` repairs a kill between them)."""
        self.best_selection()
        for stale in [*self.path.glob(".best-tmp-*"), *self.path.glob(".best-old-*")]:
            shutil.rmtree(stale, ignore_errors=True)
        tmp, old = self.path / f".best-tmp-{os.getpid()}", self.path / f".best-old-{os.getpid()}"
        write_policy(self.policy_of(tmp))
        write_json(tmp / SELECTION, selection)
        if self.best.exists():
            os.rename(self.best, old)
        os.rename(tmp, self.best)
        _fsync_dir(self.path)
        shutil.rmtree(old, ignore_errors=True)
        return self.best

    def algorithm_of(self, checkpoint: Path) -> Path:
        return checkpoint / ALGORITHM_DIR


RUN_FILE_MAX_BYTES = 64 << 20
"""The most a run folder's small files (run state, overrides, config, selection) may have: a larger one is refused."""


def _run_text(file: Path) -> str:
    """A small file of a run folder, read only as a regular file (`policies.files.read_regular`): a link, a FIFO
    or a device there is `FileRefused` (a ValueError of one line), never followed, waited on or read endlessly."""
    return read_regular(file, RUN_FILE_MAX_BYTES).decode()


# ---------------------------------------------------------------- signed checkpoints
class CheckpointNotTrusted(UserError):
    """A checkpoint that this user's runs did not sign: its pickles are never read. One line for the user."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


class CheckpointRefused(UserError):
    """A checkpoint that holds a file that is no regular file (a link, a FIFO, a device): refused before anything
    of it is read or copied, whatever its signature says, and ``resume_trust_unsigned`` does not sign it. One
    line for the user."""


def default_key_file() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "ludo-league" / "checkpoint-key"


def key_file() -> Path:
    """The key file that signs this user's checkpoints: `KEY_ENV` if set, else `default_key_file`."""
    return Path(os.environ[KEY_ENV]).expanduser() if os.environ.get(KEY_ENV) else default_key_file()


def checkpoint_key(create: bool = True) -> bytes | None:
    """This user's secret key (`key_file`); made on first use (`create`), 32 random bytes as hex, mode 0600, put in
    place by one link so that two runs starting at once share one key. None when there is none and not `create`.
    A key file that group or others may read or write, or that another user owns, is a `UserError` (as ssh
    refuses such a private key)."""
    file = key_file()
    try:
        _check_key_permissions(file)
        text = file.read_text().strip()
    except FileNotFoundError:
        if not create:
            return None
        try:
            file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            tmp = file.with_name(f".{file.name}.tmp-{os.getpid()}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, (secrets.token_hex(32) + "\n").encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, file)  # never replaces a key another process made meanwhile
            except FileExistsError:
                pass
            finally:
                tmp.unlink(missing_ok=True)
            text = file.read_text().strip()
        except OSError as err:
            raise UserError(f"cannot make the checkpoint signing key '{file}' ({err.strerror or err}): set {KEY_ENV} "
                            "to a file this user can write") from None
    except OSError as err:
        raise UserError(f"cannot read the checkpoint signing key '{file}' ({err.strerror or err})") from None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 16:
        raise UserError(f"the checkpoint signing key '{file}' is damaged (not 32+ hex bytes): move it away to make a "
                        "new one; checkpoints it signed then resume only with resume_trust_unsigned=true")
    return key


def _check_key_permissions(file: Path) -> None:
    """`UserError` of one line unless only this user can read and write the key file; FileNotFoundError if none."""
    status = file.stat()
    if hasattr(os, "getuid") and status.st_uid != os.getuid():
        raise UserError(f"the checkpoint signing key '{file}' belongs to another user (uid {status.st_uid}): use a "
                        f"key file of your own ({KEY_ENV} names it)")
    if status.st_mode & 0o077:
        raise UserError(f"the checkpoint signing key '{file}' may be read by others (mode "
                        f"{status.st_mode & 0o777:04o}): whoever reads it can sign checkpoints a resume unpickles; "
                        f"run chmod 600 '{file}'")


def _listing(checkpoint: Path) -> list[str]:
    """The files under the checkpoint's ``algorithm/`` (``algorithm/<path>``), found without following a link and
    without opening any; `CheckpointRefused` naming the first that is no regular file (a link, a FIFO, a device)."""
    try:
        return [f"{ALGORITHM_DIR}/{name}" for name in regular_files(checkpoint / ALGORITHM_DIR)]
    except FileRefused as err:
        raise _refused(checkpoint, err) from None
    except OSError as err:
        raise ValueError(f"{ALGORITHM_DIR}/ cannot be listed ({err.strerror or err})") from None


def _open(checkpoint: Path, name: str) -> int:
    """A descriptor of the checkpoint's regular file `name` (`policies.files.open_regular`)."""
    try:
        return open_regular(checkpoint / name)
    except FileRefused as err:  # replaced by a link or a FIFO since it was listed
        raise _refused(checkpoint, err) from None
    except OSError as err:
        raise ValueError(f"{name} is unreadable ({err.strerror or err})") from None


def _signed_files(checkpoint: Path) -> tuple[dict[str, str], dict[str, int]]:
    """``{path under the checkpoint: sha256 hex}`` and ``{path: size in bytes}`` of every file under its
    ``algorithm/`` (what RLlib reads); `CheckpointRefused` for one that is not a regular file."""
    digests, sizes = {}, {}
    for name in _listing(checkpoint):
        fd = _open(checkpoint, name)
        try:
            sizes[name] = os.fstat(fd).st_size
            digests[name] = sha256_regular(fd, sizes[name])
        finally:
            os.close(fd)
    return digests, sizes


def _mac(key: bytes, files: dict[str, str], sizes: dict[str, int] | None = None) -> str:
    """The HMAC of a signature; a signature of the format before sizes were signed has none (`sizes` None)."""
    body = {"format": SIGNATURE_FORMAT_V1, "files": files} if sizes is None else \
        {"format": SIGNATURE_FORMAT, "files": files, "sizes": sizes}
    message = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def sign_checkpoint(checkpoint: Path) -> None:
    """Write ``signature.json`` (atomically): the SHA-256 and size of each file under ``algorithm/`` and an
    HMAC-SHA256 over them with this user's key (`checkpoint_key`). `CheckpointRefused` when a file there is not a
    regular file: it is never signed."""
    files, sizes = _signed_files(checkpoint)
    write_json(checkpoint / SIGNATURE, {"format": SIGNATURE_FORMAT, "files": files, "sizes": sizes,
                                        "hmac": _mac(checkpoint_key(), files, sizes)})


def verify_checkpoint(checkpoint: Path) -> None:
    """Reads no pickle and writes nothing. `CheckpointNotTrusted` when this user's runs did not write the checkpoint
    (no signature, another key's, a file under ``algorithm/`` the signature does not cover); `CheckpointRefused`
    when a file there is not a regular file; `ValueError` (damaged) when a signed file is gone or its size or
    contents changed since. It checks the files where they are: a resume reads them only from `verified_copy`,
    which checks the bytes it copies."""
    files, sizes = _trusted_digests(checkpoint)
    for name, fd, size in _checked_files(checkpoint, files, sizes):
        try:
            if sha256_regular(fd, size) != files[name]:
                raise ValueError(f"{name} changed since it was written and signed")
        finally:
            os.close(fd)


def _checked_files(checkpoint: Path, files: dict[str, str], sizes: dict[str, int] | None):
    """Each signed file, opened (name, descriptor, size), once the checkpoint's files are the signature's list, every
    one a regular file of its signed size; nothing is read or written before that. A signature of the format
    before sizes has none to compare: each file is then hashed where it is, before a byte of it is copied. The
    caller closes each descriptor it is given (`_close_rest` closes what a failure leaves)."""
    names = _listing(checkpoint)
    extra = sorted(set(names) - set(files))
    if extra:
        raise _untrusted(checkpoint, f"{extra[0]} is not covered by its signature")
    missing = sorted(set(files) - set(names))
    if missing:
        raise ValueError(f"{missing[0]} is missing")
    opened: list[tuple[str, int, int]] = []
    try:
        for name in sorted(files):
            fd = _open(checkpoint, name)
            opened.append((name, fd, -1))
            size = os.fstat(fd).st_size
            if sizes is not None and size != sizes[name]:
                raise ValueError(f"{name} is {size:,} bytes, signed at {sizes[name]:,}: it changed since it was "
                                 "written and signed")
            if sizes is None:
                if sha256_regular(fd, size) != files[name]:
                    raise ValueError(f"{name} changed since it was written and signed")
                os.lseek(fd, 0, os.SEEK_SET)
            opened[-1] = (name, fd, size)
    except BaseException:
        _close_rest(opened)
        raise
    return opened


def _close_rest(opened: list[tuple[str, int, int]]) -> None:
    for _, fd, _ in opened:
        try:
            os.close(fd)
        except OSError:
            continue


def verified_copy(checkpoint: Path) -> Path:
    """The checkpoint's ``algorithm/`` copied into a new private folder (mode 0700, this user's temporary folder),
    each file's SHA-256 taken from the very bytes written to the copy and checked against the signature: what
    RLlib restores from, so that a file replaced in the run folder after the check is never read. The file list is
    compared with the signature, and every file is opened as a regular file of its signed size, before the folder
    is made: a link, a FIFO, an unlisted or a resized file writes nothing. Each copy stops at the signed size. Same
    errors as `verify_checkpoint`; a failure, Ctrl-C or SIGTERM removes what was copied; the caller removes the
    copy it is given."""
    import tempfile

    files, sizes = _trusted_digests(checkpoint)
    with _stop_raises():
        opened = _checked_files(checkpoint, files, sizes)
        copy = None
        try:
            # Named before it is made, so a SIGTERM right after the mkdir still finds it to remove; 0700: no other
            # user can swap a file in it.
            copy = Path(tempfile.gettempdir()) / f"ludo-league-resume-{secrets.token_hex(8)}"
            copy.mkdir(mode=0o700)
            for name, fd, size in opened:
                target = copy / Path(name).relative_to(ALGORITHM_DIR)
                target.parent.mkdir(parents=True, exist_ok=True)
                if copy_regular(fd, target, size) != files[name]:
                    raise ValueError(f"{name} changed since it was written and signed")
        except BaseException:
            if copy is not None:
                shutil.rmtree(copy, ignore_errors=True)
            raise
        finally:
            _close_rest(opened)
    return copy


class _stop_raises:
    """SIGTERM raises `Terminated` in the main thread while a copy is made, so that the copy's clean-up runs (the
    default action ends the process at once, leaving the copy behind); the handler before comes back after."""

    def __enter__(self):
        import threading

        self._previous = None
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
            self._previous = signal.signal(signal.SIGTERM, _raise_terminated)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)


def _raise_terminated(signum, frame) -> None:
    raise Terminated


def _untrusted(checkpoint: Path, reason: str) -> CheckpointNotTrusted:
    return CheckpointNotTrusted(
        f"resume: checkpoint '{checkpoint}' was not written by this user's runs ({reason}); resume refuses pickles "
        f"from elsewhere: its policy plays and exports without them (ckpt:{checkpoint / POLICY_DIR}, e.g. as "
        f"league.external of a new run); if you wrote this run yourself before checkpoints were signed, or "
        f"signed it with another key than {key_file()}, add resume_trust_unsigned=true", reason)


def _refused(checkpoint: Path, err: FileRefused) -> CheckpointRefused:
    return CheckpointRefused(f"resume: checkpoint '{checkpoint}': {err}; a checkpoint holds regular files only, and "
                             "nothing of it was copied or read")


def _trusted_digests(checkpoint: Path) -> tuple[dict[str, str], dict[str, int] | None]:
    """The file digests and sizes of the checkpoint's signature, once its HMAC is this user's key's (the signature
    file is read once, and its digests are what the files are compared with); sizes are None for a signature of
    the format before sizes were signed."""
    def refuse(reason: str) -> CheckpointNotTrusted:
        return _untrusted(checkpoint, reason)

    try:
        signature = read_json(read_regular(checkpoint / SIGNATURE, SIGNATURE_MAX_BYTES))
    except FileNotFoundError:
        raise refuse(f"no {SIGNATURE}") from None
    except FileRefused as err:
        raise _refused(checkpoint, err) from None
    except (OSError, ValueError):
        raise refuse(f"its {SIGNATURE} is unreadable") from None
    if not isinstance(signature, dict):
        raise refuse(f"its {SIGNATURE} is not a {SIGNATURE_FORMAT} file")
    form, files, mac = signature.get("format"), signature.get("files"), signature.get("hmac")
    sizes = signature.get("sizes") if form == SIGNATURE_FORMAT else None
    if form not in (SIGNATURE_FORMAT, SIGNATURE_FORMAT_V1) or not isinstance(files, dict) or \
            not isinstance(mac, str) or \
            not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()) or \
            (form == SIGNATURE_FORMAT and not (isinstance(sizes, dict) and set(sizes) == set(files) and all(
                type(v) is int and v >= 0 for v in sizes.values()))):
        raise refuse(f"its {SIGNATURE} is not a {SIGNATURE_FORMAT} file")
    key = checkpoint_key(create=False)
    if key is None:
        raise CheckpointNotTrusted(
            f"resume: this machine has no signing key at {key_file()}, so checkpoint '{checkpoint}' cannot be "
            f"checked (a resume makes no key): put back the key file that signed the run, or set {KEY_ENV} to it; "
            "if you wrote this run yourself and the key is lost, add resume_trust_unsigned=true", "no signing key")
    if not hmac.compare_digest(_mac(key, files, sizes), mac):
        raise refuse("its signature is not this user's key's")
    return files, sizes


RAY_SESSION = "ray_session.json"
"""The local Ray cluster a driver of this run started: its session folder, and the driver's pid and start tick."""


def _proc_start(pid: int) -> int | None:
    """A process's start time in clock ticks since boot (Linux /proc), or None when it is gone: with the pid, it
    names one process, never a later one that reused the pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[19])


def _processes() -> list[tuple[int, int]]:
    """(pid, parent pid) of every process this user can see."""
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit():
            try:
                found.append((int(entry), int(Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[1])))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _holds_open(pid: int, folders: list[str]) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if any(target.startswith(folder) for folder in folders):
            return True
    return False


def record_ray_session(run: RunDir, session_dir: str) -> None:
    """Remember the local Ray cluster this driver started (a joined cluster is not the run's to clean up)."""
    me = os.getpid()
    started_here = any(ppid == me and Path(f"/proc/{pid}/comm").read_text().strip() == "gcs_server"
                       for pid, ppid in _processes() if Path(f"/proc/{pid}/comm").exists())
    if started_here:
        write_json(run.path / RAY_SESSION, {"session_dir": session_dir, "driver_pid": me,
                                            "driver_start": _proc_start(me)})


def stop_leftovers(run: RunDir) -> list[int]:
    """SIGKILL what a killed earlier driver of this run left running: processes that hold files of its Ray
    session open (Ray's DashboardAgent and RuntimeEnvAgent outlive a ``kill -9`` of the driver by half a minute
    and more, retrying a GCS that died with it) or of the run's wandb folder (wandb's service). Nothing when that
    driver still runs. Defunct (zombie) workers are not processes to stop: their parent reaps them. Returns the
    pids stopped."""
    try:
        session = json.loads(_run_text(run.path / RAY_SESSION))
    except (OSError, ValueError):
        return []
    session_dir = session.get("session_dir") if isinstance(session, dict) else None
    if not isinstance(session_dir, str) or not _ray_session_folder(session_dir) or \
            not isinstance(session.get("driver_pid"), int):
        return []  # not what record_ray_session writes: a file is data, never a folder whose users to stop
    if session.get("driver_start") is not None and _proc_start(session["driver_pid"]) == session["driver_start"]:
        return []  # that driver is alive: its processes are its own
    folders = [session_dir.rstrip("/") + "/", str((run.path / "wandb").resolve()) + "/"]
    me, stopped = os.getpid(), []
    for pid, _ in _processes():
        if pid != me and _holds_open(pid, folders):
            try:
                os.kill(pid, signal.SIGKILL)
                stopped.append(pid)
            except OSError:
                continue
    (run.path / RAY_SESSION).unlink(missing_ok=True)
    return stopped


def _yaml_problem(err: BaseException) -> str:
    """What yaml or OmegaConf says is wrong, on one line: the problem and where (``line 3, column 7``)."""
    problem, mark = getattr(err, "problem", None), getattr(err, "problem_mark", None)
    if problem and mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    text = " ".join(str(err).split())
    return (text[:160].rsplit(" ", 1)[0] + " ..." if len(text) > 160 else text) or type(err).__name__


def _ray_session_folder(path: str) -> bool:
    """Whether `path` has the shape of a Ray session folder (``<temp>/ray/session_<time>_<pid>``), not any folder."""
    folder = Path(path)
    return folder.is_absolute() and ".." not in folder.parts and folder.name.startswith("session_") and \
        folder.name != "session_latest" and len(folder.parts) >= 3


def last_iteration(run: Path) -> dict[str, Any]:
    """The run's last iteration row of its `METRICS` (rows without counters, such as evaluations, skipped)."""
    rows = [r for r in read_jsonl(run / METRICS, "metrics row") if "env_steps" in r]
    if not rows:
        raise UserError(f"{run / METRICS}: the training run logged no iteration")
    return rows[-1]


def trained_so_far(run: Path) -> tuple[int, int | None]:
    """(env steps, main's own decisions among them) of the run's last iteration; decisions are None for a run
    from before they were logged."""
    row = last_iteration(run)
    decisions = row.get("main_decisions")
    return int(row["env_steps"]), None if decisions is None else int(decisions)


def trained_env_steps(path: str | Path) -> int | None:
    """The env steps main had trained when the policy `path` names was saved: a run folder's newest checkpoint's, a
    checkpoint's (or a copy of one with its run state, as ``benchmarks/scaling.py`` keeps a milestone), best/'s
    (its selection record); None when nothing beside the policy records them (a shipped policy). Only a number is
    read from those files."""
    from policies.checkpoints import find_policy

    folder = find_policy(path)
    for record in (folder.parent / RUN_STATE, folder.parent / SELECTION):
        try:
            steps = json.loads(record.read_text())["env_steps"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(steps, int) and not isinstance(steps, bool) and steps >= 0:
            return steps
    return None


TRAIN_SCRIPT = Path(__file__).resolve().parents[1] / "train.py"


def train_to_env_steps(run: Path, env_steps: int, first_start: Sequence[str], log: Path,
                       overrides: Sequence[str] = ()) -> float:
    """Take the training run `run` to `env_steps` env steps with ``launch/train.py`` in a subprocess, whatever the
    wall clock (``budget.minutes=0``), and return the seconds it took. A new run starts with the overrides
    `first_start` (its experiment, variant, seed, ...) and writes into `run`; a run with a checkpoint resumes with a
    larger ``budget.env_steps`` (its own settings kept, `keep_run_settings`); one killed before its first checkpoint
    has trained nothing and starts over. `overrides` go to every start (the machine's ``resources.*``). The
    command's output is appended to `log`; a failure is a `UserError` naming it.

    Stopping: the training runs in a session of its own, so a signal meant for this process reaches it once, from
    here. Ctrl-C, SIGTERM or SIGHUP here pass SIGTERM on to it: it saves a checkpoint (`launch.training.loop`) and
    stops, then KeyboardInterrupt is raised here. If this process dies without a word (kill -9), Linux sends the
    training SIGTERM all the same (``PR_SET_PDEATHSIG``), so no training goes on unattended beside a later one in
    the same run folder."""
    import subprocess
    import sys
    import time

    run = Path(run).absolute()  # the training runs in the project's folder, not in this process's
    budget = [f"budget.env_steps={env_steps}", "budget.minutes=0"]
    if RunDir(run).checkpoint_dirs():
        command = [f"resume={run}", *budget, *overrides]
    else:
        if run.exists():
            shutil.rmtree(run)
        command = [*first_start, *budget, f"hydra.run.dir={run}", *overrides]
    log.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    stopped = []
    with open(log, "a") as out:
        out.write(f"\n$ python launch/train.py {' '.join(command)}\n")
        out.flush()
        process = subprocess.Popen([sys.executable, str(TRAIN_SCRIPT), *command], stdout=out,
                                   stderr=subprocess.STDOUT, cwd=TRAIN_SCRIPT.parents[1], start_new_session=True,
                                   preexec_fn=_stopped_with_parent())

        def pass_on(signum, frame):
            stopped.append(signum)
            if not stopped[1:]:  # once: a second signal would cut the training's save short
                process.send_signal(signal.SIGTERM)

        previous = {sig: signal.signal(sig, pass_on) for sig in (signal.SIGTERM, signal.SIGHUP)}
        try:
            while True:
                try:
                    status = process.wait()
                    break
                except KeyboardInterrupt:  # Ctrl-C here: the training hears it from us alone
                    pass_on(signal.SIGINT, None)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    if stopped:
        raise KeyboardInterrupt
    if status != 0:
        raise UserError(f"training {run} stopped with status {status}: see {log}")
    reached = trained_env_steps(run)
    if reached is None or reached < env_steps:
        raise UserError(f"training {run} stopped at {reached or 0:,} of {env_steps:,} env steps: see {log}")
    return time.perf_counter() - start


def _stopped_with_parent():
    """A ``preexec_fn`` that has Linux send the child SIGTERM when this process dies; None elsewhere. libc is
    looked up here, before the fork, so the child only makes one system call before it runs the command."""
    import ctypes
    import ctypes.util
    import sys

    name = ctypes.util.find_library("c")
    if not sys.platform.startswith("linux") or name is None:
        return None
    prctl = ctypes.CDLL(name, use_errno=True).prctl
    set_parent_death_signal = 1  # PR_SET_PDEATHSIG

    def stop_with_parent() -> None:
        prctl(set_parent_death_signal, int(signal.SIGTERM))

    return stop_with_parent


def exploiters_frozen(run: Path) -> dict[str, int]:
    """How often each exploiter of the run was frozen into its league (``roles/<module>/frozen``); empty
    without exploiters."""
    prefix, suffix = "roles/", "/frozen"
    return {key[len(prefix):-len(suffix)]: int(value) for key, value in last_iteration(run).items()
            if key.startswith(prefix) and key.endswith(suffix) and value is not None}


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=1) + "\n")


def _fsync_tree(folder: Path) -> None:
    """Every file under `folder`, then every folder, flushed to the disk."""
    for path in sorted(folder.rglob("*"), key=lambda p: -len(p.parts)):
        if path.is_file() and not path.is_symlink():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        elif path.is_dir():
            _fsync_dir(path)
    _fsync_dir(folder)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def merge_overrides(saved: list[str], new: list[str]) -> list[str]:
    """The first start's overrides, each replaced by a new one for the same key; new keys appended."""
    def key(override: str) -> str:
        return override.partition("=")[0].lstrip("+~")

    new_keys = {key(o) for o in new}
    return [o for o in saved if key(o) not in new_keys] + list(new)


def leaves(node: Any, prefix: str = "", sep: str = ".") -> dict[str, Any]:
    """``{"algo.lr": 0.0005, ...}``: every leaf of nested dicts by its joined key (a list is one leaf)."""
    if not isinstance(node, dict):
        return {prefix: node}
    found: dict[str, Any] = {}
    for key, value in node.items():
        found.update(leaves(value, f"{prefix}{sep}{key}" if prefix else str(key), sep))
    return found


def typed_today(resume: str, overrides: list[str]) -> list[str]:
    """The overrides of a resume's command line that were not the run's own at its first start (`resume_argv`
    merges those in): what the user typed today."""
    saved = set(RunDir(resume).saved_overrides() or ())
    return [o for o in overrides if o not in saved]


def keep_run_settings(dict_cfg, saved: dict[str, Any] | None, overrides: list[str],
                      typed: Sequence[str] = ()) -> list[str]:
    """On a resume, give back the run's own value of every setting whose default changed since its first start.

    A resumed run continues the training it started: a setting that differs from the run's `saved` config
    (`RunDir.saved_config`) takes the run's value unless an override (the first start's or this command
    line's) names it or a section above it; an override of the first start that picks a config group's file
    (``algo=dqn``, ``+exp=...``) names no value, so the file's changed defaults are given back too, but one
    `typed` on today's command line and not at the first start (``network=token_set``) names its whole section,
    which then follows today (a resume refuses what changes main's network:
    `launch.training.trainers.rllib.check_same_network`).
    `MACHINE_SECTIONS` always follow today. Returns the notes to print:
    the settings given back, those added since (today's default: the run never had them) and those gone.
    """
    if saved is None:
        return [("note: this run was started before runs saved their config.yaml: it resumes with today's defaults "
                 "(saved now, so later resumes keep them)")]
    def key(override: str) -> str:
        return override.partition("=")[0].lstrip("+~").partition("@")[0]

    asked = {key(o) for o in overrides if not (CONF_DIR / key(o).replace(".", "/")).is_dir()}
    asked |= {key(o) for o in typed}

    def followed_today(key: str) -> bool:
        parts = key.split(".")
        return parts[0] in MACHINE_SECTIONS or any(".".join(parts[:i]) in asked for i in range(1, len(parts) + 1))

    now = leaves(OmegaConf.to_container(dict_cfg, resolve=True))
    before = leaves(saved)
    kept = {k: v for k, v in before.items() if k in now and now[k] != v and not followed_today(k)}
    for key, value in kept.items():
        OmegaConf.update(dict_cfg, key, value, merge=False)
    notes = []
    if kept:
        notes.append("note: resume keeps this run's settings where today's defaults differ: "
                     + ", ".join(f"{k}={v!r} (default now {now[k]!r})" for k, v in kept.items()))
    added = [f"{k}={now[k]!r}" for k in now if k not in before and not followed_today(k)]
    if added:
        notes.append(f"note: settings added since this run started take today's defaults: {', '.join(added)}")
    gone = [k for k in before if k not in now and not followed_today(k)]
    if gone:
        notes.append(f"note: settings this run had no longer exist: {', '.join(gone)}")
    return notes


# ---------------------------------------------------------------- pieces every trainer's loop shares
class Terminated(KeyboardInterrupt):
    """A scheduler's stop (SIGTERM), taking the Ctrl-C path; the exit status then says which it was."""


class StopSignals:
    """Ctrl-C (SIGINT) and a scheduler's stop (SIGTERM) for a run loop in the main thread, which must not lose one.

    Inside ``with StopSignals() as stops:`` each signal raises at once wherever the main thread is:
    KeyboardInterrupt, or `Terminated` for SIGTERM (a scheduler's stop takes the Ctrl-C path, which saves). Our
    handler is installed even where SIGINT was inherited ignored (a command started with ``cmd &``). Library code on
    the main thread's path can still lose the exception: a broad ``except`` that goes on, or a handler of its own
    that defers the signal and drops it (Ray's around a task's submission, when the submission raises). So every
    signal is also written to Python's wakeup fd, which the interpreter's C-level handler does whichever Python
    handler is installed at that moment, and `raise_pending` at a step's end raises a signal that has not stopped
    the loop by then. The previous handlers and wakeup fd come back on leaving."""

    def __enter__(self) -> StopSignals:
        self._read, self._write = os.pipe()
        for fd in (self._read, self._write):
            os.set_blocking(fd, False)  # the interpreter writes the wakeup fd from its signal handler
        self._previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._previous = {sig: signal.signal(sig, self._raise) for sig in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._read)
        os.close(self._write)

    @staticmethod
    def _raise(signum, frame) -> None:
        raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt

    def raise_pending(self) -> None:
        """Raise the first stop signal received since the last call, if any. A signal whose exception reached the
        loop is not seen again: the loop's stop path never calls this."""
        try:
            received = os.read(self._read, 4096)
        except BlockingIOError:
            return
        stops = [sig for sig in received if sig in (signal.SIGINT, signal.SIGTERM)]
        if stops:
            self._raise(stops[0], None)


def stopped_status(err: KeyboardInterrupt) -> int:
    """The exit status of a run stopped by `err` once it has saved: 130 for Ctrl-C, 143 for SIGTERM, as a shell
    reports a process those signals ended."""
    return 128 + (signal.SIGTERM if isinstance(err, Terminated) else signal.SIGINT)


def budget_spent(cfg: TrainConfig, state: RunState) -> bool:
    budget = cfg.budget
    return bool(
        (budget.minutes and state.elapsed_s >= budget.minutes * 60)
        or (budget.env_steps and state.env_steps >= budget.env_steps)
        or (budget.iterations and state.iteration >= budget.iterations)
    )


def panel_score(evaluation: dict[str, Any]) -> float:
    """What ranks a run's evaluations for its best policy (`SCORE_BY`): the mean win rate over the panel."""
    results = evaluation["results"]
    return sum(r["win_rate"] for r in results) / len(results)


def eval_suffix(evaluations: list[dict]) -> str:
    """`` | eval@N vs random 71.2% [67.1,75.0], ...``: the newest evaluation, for a progress line."""
    if not evaluations:
        return ""
    last = evaluations[-1]
    parts = [f"{r['opponent']} {100 * r['win_rate']:.1f}% [{100 * r['ci95'][0]:.1f},{100 * r['ci95'][1]:.1f}]"
             for r in last["results"]]
    return f" | eval@{last['iteration']} vs " + ", ".join(parts)


class WandbLogger:
    """wandb run in ``<run_dir>/wandb``: the config, every metric per iteration, the final policy as an artifact."""

    def __init__(self, cfg: TrainConfig, run: RunDir, state: RunState):
        self.mode = cfg.wandb.mode
        self.run = None
        if self.mode == "disabled":
            return
        import wandb

        if state.wandb_id is None:  # kept in the run state, so a resumed run continues the same wandb run
            state.wandb_id = secrets.token_hex(4)
        self.run = wandb.init(
            project=cfg.wandb.project, entity=cfg.wandb.entity, group=cfg.wandb.group, tags=list(cfg.wandb.tags),
            name=f"{cfg.name}-{run.path.name}", mode=self.mode, dir=str(run.path), id=state.wandb_id,
            resume="allow", config=OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True),
            settings=wandb.Settings(console="off", quiet=True),
        )
        self.log_checkpoint = cfg.wandb.log_checkpoint

    def log(self, result: dict, row: dict[str, Any], ranking: list[dict[str, Any]] | None = None) -> None:
        """One iteration's metrics; with `ranking` (the league's ranking rows after a rating round, read where
        the round was played) its table too."""
        if self.run is None:
            return
        metrics = {f"rllib/{k}": v for k, v in flatten(result).items()}
        metrics.update({f"progress/{k}": v for k, v in row.items() if v is not None and "/" not in k})
        metrics.update({k: v for k, v in row.items() if "/" in k and v is not None})
        if ranking:
            from policies.league.leaderboard import ranking_table

            metrics["league/ranking"] = ranking_table(ranking)
        self.run.log(metrics, step=row["iteration"])

    def finish(self, final: dict | None = None, policy: Path | None = None, best: dict | None = None) -> None:
        if self.run is None:
            return
        import wandb

        for prefix, evaluation in (("final", final), ("best", (best or {}).get("final_evaluation"))):
            for r in (evaluation or {}).get("results", []):
                self.run.summary[f"{prefix}/win_rate_vs_{r['opponent']}"] = r["win_rate"]
                self.run.summary[f"{prefix}/ci95_vs_{r['opponent']}"] = list(r["ci95"])
        if best is not None:
            self.run.summary["best/iteration"] = best["iteration"]
        if policy is not None and self.log_checkpoint:
            artifact = wandb.Artifact(f"{self.run.name}-policy".replace("/", "-"), type="model")
            artifact.add_dir(str(policy))
            self.run.log_artifact(artifact)
        self.run.finish()


def flatten(tree: dict) -> dict[str, float]:
    """The numbers of a nested result dict under ``a/b/c`` keys."""
    out: dict[str, float] = {}
    for name, value in leaves(tree, sep="/").items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = value
        elif hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            out[name] = value.item()
    return out
