"""What training tests share: the config composed as `launch/train.py` composes it, and a run's outputs."""
from __future__ import annotations

import json
import os
from pathlib import Path

from omegaconf import OmegaConf

import launch.train  # noqa: F401  (registers the resolver the config uses)
from launch.cli import compose
from launch.schema import check


def train_config(*overrides: str, run_dir: str = "/tmp/unused"):
    """`TrainConfig` for `overrides`, after `launch.schema.check`; a bad one raises as the script would."""
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
