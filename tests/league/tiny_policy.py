"""A real saved policy, as small as it gets: a freshly built PPO module with one 8-unit layer, via write_policy."""
from __future__ import annotations

from pathlib import Path


def write_tiny_policy(dest: Path, seed: int = 0, players: int = 4, variant: str = "classic") -> Path:
    """A `policies.checkpoints` policy folder at `dest` that `load_policy` and ``ckpt:`` players read."""
    import torch

    from ludo_env.core import ACTION_SPACE, observation_space
    from policies.checkpoints import write_policy
    from policies.modules import module_spec

    model_config = {"obs": "egocentric", "variant": variant, "players": players,
                    "network": {"kind": "mlp", "hidden": [8]}}
    torch.manual_seed(seed)
    module = module_spec("ppo", observation_space("egocentric"), ACTION_SPACE, model_config).build()
    return write_policy(dest, "ppo", model_config, module.state_dict())
