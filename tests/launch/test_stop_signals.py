"""A training loop's stop signals (`launch.training.runs.StopSignals`): Ctrl-C and SIGTERM stop the run even when
library code on the main thread's path loses the exception they raise."""
from __future__ import annotations

import os
import signal
import time

import pytest

from launch.training.runs import StopSignals, Terminated


def deliver(signum: int) -> None:
    """Send `signum` to this process and give the interpreter a few bytecodes to run its handler."""
    os.kill(os.getpid(), signum)
    for _ in range(100):
        time.sleep(0.001)


def test_ctrl_c_raises_at_once_and_sigterm_raises_terminated():
    with StopSignals():
        with pytest.raises(KeyboardInterrupt) as raised:
            deliver(signal.SIGINT)
        assert not isinstance(raised.value, Terminated)
        with pytest.raises(Terminated):
            deliver(signal.SIGTERM)


@pytest.mark.parametrize("signum, stop", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)])
def test_a_stop_that_a_broad_except_swallowed_is_raised_at_the_next_step_end(signum, stop):
    with StopSignals() as stops:
        stops.raise_pending()  # nothing received yet
        try:
            deliver(signum)
        except BaseException:  # noqa: BLE001  library code that goes on after anything
            pass
        with pytest.raises(stop):
            stops.raise_pending()
        stops.raise_pending()  # raised once, not again at the step after


def test_a_stop_that_a_deferring_handler_dropped_is_raised_at_the_next_step_end():
    with StopSignals() as stops:
        ours = signal.signal(signal.SIGINT, lambda signum, frame: None)  # a library's handler, swapped in and out
        try:
            deliver(signal.SIGINT)
        finally:
            signal.signal(signal.SIGINT, ours)
        with pytest.raises(KeyboardInterrupt):
            stops.raise_pending()


def test_leaving_gives_back_the_handlers_and_the_wakeup_fd_there_were():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    read, write = os.pipe()
    os.set_blocking(write, False)
    previous_fd = signal.set_wakeup_fd(write)
    try:
        with StopSignals():
            assert signal.getsignal(signal.SIGINT) is not before[signal.SIGINT]
        assert {sig: signal.getsignal(sig) for sig in before} == before
        assert signal.set_wakeup_fd(write) == write
    finally:
        signal.set_wakeup_fd(previous_fd)
        os.close(read)
        os.close(write)


def test_a_run_started_with_ctrl_c_ignored_still_stops_on_it():
    ignored = signal.signal(signal.SIGINT, signal.SIG_IGN)  # what a shell's ``cmd &`` leaves a command
    try:
        with StopSignals():
            with pytest.raises(KeyboardInterrupt):
                deliver(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, ignored)
