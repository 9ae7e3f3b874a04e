"""The training config a test works with, composed as `launch/train.py` composes it and checked."""
from __future__ import annotations

from omegaconf import OmegaConf

import launch.train  # noqa: F401  (registers the resolver the config uses)
from launch.cli import compose
from launch.schema import check


def train_config(*overrides: str, run_dir: str = "/tmp/unused"):
    """`TrainConfig` for `overrides`, after `launch.schema.check`; a bad one raises as the script would."""
    cfg = OmegaConf.to_object(compose("config", [*overrides, f"run_dir={run_dir}"]))
    check(cfg)
    return cfg
