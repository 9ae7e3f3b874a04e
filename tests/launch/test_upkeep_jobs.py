"""`launch.training.upkeep.BackgroundJob` without Ray: one job of a kind at a time, results taken up on the
training path, a failure one warning line, three in a row a `UserError`, a `Stop` at once. The jobs
run in the job's own thread, as a checkpoint does."""
from __future__ import annotations

import threading

import pytest

from launch.cli import UserError
from launch.training.upkeep import FAILURES_TO_STOP, BackgroundJob, Stop, done_now


def job(taken: list):
    return BackgroundJob("the check", lambda label, result: taken.append((label, result)),
                         on_failed=lambda: "nothing lost")


def boom():
    raise OSError(28, "No space left on device")


def test_a_result_is_taken_up_only_when_collected_and_one_job_runs_at_a_time():
    taken, release = [], threading.Event()
    check = job(taken)
    check.start("iteration 1", check.in_thread(lambda: release.wait(30) and 42))
    assert check.busy and not check.collect() and taken == []  # still running: never waited for
    with pytest.raises(RuntimeError, match="still running"):
        check.start("iteration 2", done_now(lambda: 1))
    release.set()
    assert check.wait() and taken == [("iteration 1", 42)] and not check.busy
    assert not check.wait() and not check.collect()  # nothing under way
    check.start("iteration 2", done_now(lambda: 7))
    assert check.collect() and taken[-1] == ("iteration 2", 7)
    check.close()


def test_a_failure_is_one_warning_line_and_three_in_a_row_stop(capsys):
    taken = []
    check = job(taken)
    for iteration in (1, 2):
        check.start(f"iteration {iteration}", check.in_thread(boom))
        check.wait()
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"warning: the check of iteration {i} failed (OSError: [Errno 28] No space left on device); "
                     "nothing lost: training goes on, and the next one starts when it is due" for i in (1, 2)]
    check.start("iteration 3", done_now(lambda: "fine"))  # a success in between: the count starts again
    check.wait()
    for iteration in range(4, 4 + FAILURES_TO_STOP - 1):
        check.start(f"iteration {iteration}", done_now(boom))
        check.wait()
    check.start("iteration 9", done_now(boom))
    with pytest.raises(UserError, match=r"^the check failed 3 times in a row \(the last, of iteration 9: OSError: "
                                        r"\[Errno 28\] No space left on device\)$"):
        check.wait()
    assert taken == [("iteration 3", "fine")]
    check.close()


def test_a_stop_stops_at_once_unless_the_run_is_stopping_anyway(capsys):
    check = job([])
    check.start("iteration 1", done_now(lambda: Stop("eval.panel: the bot raised")))
    with pytest.raises(UserError, match="^eval.panel: the bot raised$"):
        check.collect()
    check.start("iteration 2", done_now(lambda: Stop("eval.panel: the bot raised")))
    check.wait(stopping=True)
    assert capsys.readouterr().err == "warning: the check of iteration 2: eval.panel: the bot raised\n"
    for iteration in range(3, 3 + FAILURES_TO_STOP):  # stopping: failures are warnings, never an error
        check.start(f"iteration {iteration}", done_now(boom))
        check.wait(stopping=True)
    assert capsys.readouterr().err.count("the run is stopping") == FAILURES_TO_STOP
