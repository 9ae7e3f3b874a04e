"""What training tests share: the config composed as `launch/train.py` composes it, and a run's outputs."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from launch.cli import compose
from launch.training.schema import check


def train_config(*overrides: str, run_dir: str = "/tmp/unused"):
    """`TrainConfig` for `overrides`, after `launch.training.schema.check`; a bad one raises as the script would."""
    cfg = OmegaConf.to_object(compose("config", [*overrides, f"run_dir={run_dir}"]))
    check(cfg)
    return cfg


def script_env() -> dict:
    """The environment for `launch/train.py` in a subprocess: without WANDB_MODE, so the config's default
    (offline) is what is tested."""
    env = dict(os.environ)
    env.pop("WANDB_MODE", None)
    return env


def metrics(run_dir: Path) -> list[dict]:
    """The rows of a run's ``metrics.jsonl``."""
    return [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]


def kill_training_when(run_dir: Path, args: list[str], ready, timeout_s: float, what: str, poll_s: float = 0.05,
                       script: tuple[str, ...] = ("launch/train.py",)) -> None:
    """Start ``launch/train.py *args`` (or `script`, ``("-m", "tests.launch.held_checkpoints")``) in `run_dir`,
    wait until ``ready()`` holds, then SIGKILL it with everything it started (its own process group: Ray's
    processes too). Fails with the run's stderr if it dies first, or with "no <what> in time"."""
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, *script, *args, f"hydra.run.dir={run_dir}"], cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=script_env(),
                            start_new_session=True)
    try:
        wait_until(ready, proc, timeout_s, what, lambda: proc.stderr.read()[-3000:], poll_s)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def wait_until(ready, proc, timeout_s: float, what: str, why_it_ended=lambda: "", poll_s: float = 0.05) -> None:
    """Poll until ``ready()`` holds for the run `proc`; fails with ``why_it_ended()`` (its stderr) if the run ends
    first, or with "no <what> in time" after `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert proc.poll() is None, why_it_ended()
        assert time.monotonic() < deadline, f"no {what} in time"
        time.sleep(poll_s)


def flat_weights(state) -> dict[str, np.ndarray]:
    """A module's nested state dict as one level of numpy arrays keyed by path, for comparing weights."""
    out = {}
    for key, value in state.items():
        if isinstance(value, dict):
            out.update({f"{key}/{k}": v for k, v in flat_weights(value).items()})
        else:
            out[key] = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value)
    return out


def docs_reference_hook():
    """``docs/hooks/reference.py``, the docs site's reference generator, as a module (loaded once per process);
    the test is skipped without the docs extra, whose griffe it reads docstrings with."""
    pytest.importorskip("griffe", reason="the reference generator reads docstrings with griffe (the docs extra)")
    name = "docs_reference_hook"
    if name not in sys.modules:
        hook = Path(__file__).resolve().parents[2] / "docs" / "hooks" / "reference.py"
        spec = importlib.util.spec_from_file_location(name, hook)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
