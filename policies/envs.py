"""The single-agent envs with opponents named by player specs: the agents layer resolves the specs.

``ludo_env`` may not import the agents (imports run engine -> envs -> agents), so
`ludo_env.gym_env.LudoEnv` and `ludo_env.vector_env.LudoVectorEnv` take
players, or specs plus an ``opponent_factory``. These helpers pass
`build_opponent`, so ``opponents=["hybrid", "ckpt:runs/x"]``
works as in any other command:

```python
env = make_env(variant="classic", opponents=["hybrid", "random", "random"])
envs = make_vector_env(num_envs=256, opponents=["hybrid", "random", "random"])
```

The keywords are those of the env constructors.
"""
from __future__ import annotations

from typing import Any

from ludo_env.gym_env import LudoEnv
from ludo_env.vector_env import LudoVectorEnv
from policies.players import check_fits, make_player


def build_opponent(spec: Any, seed: int, rules: Any) -> Any:
    """A player from a spec (`make_player`) or a player passed in, checked to fit `rules` (`check_fits`)."""
    player = spec if hasattr(spec, "act") else make_player(str(spec), seed=seed, rules=rules)
    check_fits(player, rules)
    return player


def make_env(**settings: Any) -> LudoEnv:
    """`LudoEnv` with its opponents built from specs, and checked, by `build_opponent`."""
    return LudoEnv(opponent_factory=build_opponent, **settings)


def make_vector_env(num_envs: int = 16, **settings: Any) -> LudoVectorEnv:
    """`LudoVectorEnv` with its opponents built from specs, and checked, by `build_opponent`."""
    return LudoVectorEnv(num_envs, opponent_factory=build_opponent, **settings)
