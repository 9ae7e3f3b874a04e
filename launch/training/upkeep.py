"""Upkeep beside training: jobs that run while the learner trains, their failures, and the copies they read.

A training run keeps up its league and its run folder: snapshots, rating rounds, panel evaluations,
checkpoints. Training never waits for them (``upkeep.background``, docs/pages/concepts/upkeep.md): each job reads a frozen
copy (`frozen_copy`) taken on the training path in milliseconds, runs beside training, and its result is
taken up at a later iteration. A `BackgroundJob` is one kind of job, run one at a time:

* `BackgroundJob.start` hands it a `concurrent.futures.Future` of its result: a thread's
  (`BackgroundJob.in_thread`), a Ray task's (``ref.future()``), or one already done (`done_now`: the job ran
  on the training path, ``upkeep.background=false``).
* `BackgroundJob.collect` takes up a finished result (``on_done``), `BackgroundJob.wait` waits for it:
  before the next job of its kind starts, so results lag by one job at most, and before a save that must be
  complete.
* A job that fails (raises, or its process dies) is named in one warning line and training goes on: the
  next one starts when it is due. `FAILURES_TO_STOP` failures in a row raise `launch.cli.UserError`: the run
  loop then saves and stops in one line. A job whose result is a `Stop` stops the run at once: a user's
  mistake that another try would repeat (a panel bot that raises).
"""
from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from launch.cli import UserError, one_line

FAILURES_TO_STOP = 3
"""A job that fails this many times in a row stops the run (after a checkpoint)."""


def frozen_copy(tree: Any) -> Any:
    """A deep copy of a state tree, for a job that reads it while training goes on: RLlib's state holds live
    containers of the algorithm's (its metrics' series, which every iteration fills), and which of its arrays
    are copies and which views of the learner's tensors is RLlib's to change."""
    return copy.deepcopy(tree)


@dataclass(frozen=True)
class Stop:
    """A job's result that stops the run: `reason`, one line (another try would fail the same way)."""

    reason: str


def done_now(run: Callable[[], Any]) -> Future:
    """`run()` on the training path, now, as a finished future (its exception inside, as a thread's would be)."""
    future: Future = Future()
    try:
        future.set_result(run())
    except Exception as err:  # noqa: BLE001  a job's failure is the job's, wherever it ran
        future.set_exception(err)
    return future


def failure_text(err: BaseException) -> str:
    """What a job raised, in one line: a Ray task's error is the error it wraps (``RayTaskError.cause``), without
    Ray's traceback; a worker that died is Ray's first line about it."""
    cause = getattr(err, "cause", None)
    if isinstance(cause, BaseException):
        err = cause
    text = one_line(err) if str(err).strip() else ""
    return f"{type(err).__name__}: {text[:300]}" if text else type(err).__name__


class BackgroundJob:
    """One kind of upkeep job (module docstring); `what` names it in messages (``the league round``)."""

    def __init__(self, what: str, on_done: Callable[[Any, Any], None], on_failed: Callable[[], str] | None = None):
        self.what = what
        self.on_done = on_done
        """``on_done(label, result)``: take up a job's result on the training path."""
        self.on_failed = on_failed
        """``on_failed()``: after a failure, make the next job start clean (a new worker); returns what the
        warning adds (which checkpoint a resume would start from), or ""."""
        self.failures = 0
        """Failures in a row."""
        self._pending: tuple[Any, Future] | None = None
        self._threads: ThreadPoolExecutor | None = None

    @property
    def busy(self) -> bool:
        return self._pending is not None

    def in_thread(self, run: Callable[[], Any]) -> Future:
        """`run()` in this job's own thread (one at a time, so jobs of a kind never overlap)."""
        if self._threads is None:
            self._threads = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ludo-upkeep")
        return self._threads.submit(run)

    def start(self, label: Any, future: Future) -> None:
        """A job under way; `label` names it in messages (``iteration 20``) and goes to ``on_done``."""
        if self._pending is not None:
            raise RuntimeError(f"{self.what} of {self._pending[0]} is still running: wait for it first")
        self._pending = (label, future)

    def collect(self) -> bool:
        """Take up the job's result if it has finished (never waits); True when there was one to take up."""
        if self._pending is None or not self._pending[1].done():
            return False
        return self._take()

    def wait(self, stopping: bool = False) -> bool:
        """Wait for the job under way and take up its result; True when there was one. `stopping`: the run is
        stopping anyway (a save on Ctrl-C, after an error), so a failure or a `Stop` is only a warning."""
        if self._pending is None:
            return False
        return self._take(stopping)

    def _take(self, stopping: bool = False) -> bool:
        label, future = self._pending
        try:
            result = future.result()  # a Ctrl-C while waiting leaves the job pending: the save after it waits again
        except Exception as err:  # noqa: BLE001  whatever the job raised, or its process dying: the job's failure
            self._pending = None
            self.failed(label, failure_text(err), stopping)
            return True
        self._pending = None
        if isinstance(result, Stop):
            if not stopping:
                raise UserError(result.reason)
            print(f"warning: {self.what} of {label}: {result.reason}", file=sys.stderr, flush=True)
            return True
        self.failures = 0
        self.on_done(label, result)
        return True

    def failed(self, label: Any, reason: str, stopping: bool = False) -> None:
        """Count a failure of the job of `label`: one warning line, or `UserError` at `FAILURES_TO_STOP` in a
        row (never while `stopping`)."""
        self.failures += 1
        note = self.on_failed() if self.on_failed is not None else ""
        if self.failures >= FAILURES_TO_STOP and not stopping:
            raise UserError(f"{self.what} failed {self.failures} times in a row (the last, of {label}: {reason})")
        goes_on = "the run is stopping" if stopping else "training goes on, and the next one starts when it is due"
        print(f"warning: {self.what} of {label} failed ({reason}){'; ' + note if note else ''}: {goes_on}",
              file=sys.stderr, flush=True)

    def close(self) -> None:
        """Let a job under way finish (a thread's is not interrupted) and release the thread."""
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None
