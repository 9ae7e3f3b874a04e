"""Every training algorithm, declared once: `REGISTRY` maps ``algo.name`` to its `Algorithm`.

One file here per algorithm holds its settings class (what ``conf/algo/<name>.yaml`` is typed by and how it
checks itself) and its ``ALGORITHM`` entry: the trainer that runs it and, for an RLlib algorithm, how RLlib
trains it (`RLlibTraining`). Everything else reads this registry: the config schema registers and checks the
settings (`launch.training.schema`), the builder asks for heads and training settings
(`launch.training.build`), ``launch/train.py`` picks the trainer, and ``benchmarks/train_throughput.py`` times
every RLlib algorithm. What a saved module of an RLlib algorithm is belongs to the agents layer, which cannot
import this one: `policies.algorithms` (same names; a test checks they agree).

Adding an algorithm: its file here with ``ALGORITHM = Algorithm(...)`` and one line in `REGISTRY`; an RLlib
one also needs its ``policies.algorithms.ModuleAlgorithm`` and a ``SavedKind`` in `policies.saved`, a
``conf/algo/<name>.yaml`` and, to be timed by default, a ``conf/exp/<name>_selfplay.yaml``.
"""
from __future__ import annotations

from launch.training.algorithms import dqn, ga, imitate, ppo, td_lambda
from launch.training.algorithms.base import Algorithm, RLlibTraining

REGISTRY: dict[str, Algorithm] = {a.name: a for a in (
    ppo.ALGORITHM, dqn.ALGORITHM, ga.ALGORITHM, imitate.ALGORITHM, td_lambda.ALGORITHM,
)}  # the order the choices are named in; a new algorithm goes last


def algorithm(name: str) -> Algorithm:
    """The declaration of ``algo.name``; one line naming the known ones if there is none."""
    if name not in REGISTRY:
        raise ValueError(f"algo.name={name!r} is not allowed: choose {' or '.join(REGISTRY)}")
    return REGISTRY[name]


def rllib_names() -> tuple[str, ...]:
    """The algorithms RLlib trains; every other one runs its own loop."""
    return tuple(name for name, a in REGISTRY.items() if a.rllib is not None)


def rllib_training(name: str) -> RLlibTraining:
    """How RLlib trains ``algo.name``; one line naming the RLlib algorithms if it is none of them."""
    training = REGISTRY[name].rllib if name in REGISTRY else None
    if training is None:
        raise ValueError(f"algo.name={name!r} is not an RLlib algorithm here: choose {' or '.join(rllib_names())}")
    return training
