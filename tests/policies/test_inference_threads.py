"""Torch threading for inference: a passive OpenMP wait set before torch loads (unless the user chose one), and
the forward passes on their own intra-op thread count."""
from __future__ import annotations

import os
import subprocess
import sys


def _policy_after(code: str, env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if env_value is not None:
        env["OMP_WAIT_POLICY"] = env_value
    out = subprocess.run([sys.executable, "-c", code + "; import os; print(os.environ['OMP_WAIT_POLICY'])"],
                         env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_importing_the_agents_or_the_commands_sets_a_passive_wait_before_torch():
    assert _policy_after("import policies, sys; assert 'torch' not in sys.modules", None) == "PASSIVE"
    assert _policy_after("import launch.cli, sys; assert 'torch' not in sys.modules", None) == "PASSIVE"


def test_a_wait_policy_the_user_set_is_kept():
    assert _policy_after("import policies", "ACTIVE") == "ACTIVE"


def test_inference_runs_on_its_own_thread_count_and_gives_the_callers_back():
    import torch

    from policies.modules import INFERENCE_THREADS, intra_op_threads

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with intra_op_threads(INFERENCE_THREADS):
            assert torch.get_num_threads() == INFERENCE_THREADS
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_inference_blocks_in_several_threads_at_once_each_run_on_the_inference_count():
    import threading

    import torch

    from policies.modules import INFERENCE_THREADS, intra_op_threads

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    inside, seen = threading.Barrier(2, timeout=30), []

    def block():
        torch.set_num_threads(2)  # this thread's own count, as a caller's
        with intra_op_threads(INFERENCE_THREADS):
            inside.wait()  # both blocks are open at once
            seen.append(torch.get_num_threads())
            inside.wait()
        seen.append(torch.get_num_threads())

    threads = [threading.Thread(target=block) for _ in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert seen == [INFERENCE_THREADS] * 2 + [2] * 2 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
