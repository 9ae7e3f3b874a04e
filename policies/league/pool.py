"""The self-play opponent pool: `Matchup`, `Matchmaker` and `SnapshotPool`.

Module ids (one RLModule each, all built when the algorithm is built):

* ``main``: the learning policy, the only one trained;
* ``snapshot_0`` .. ``snapshot_{K-1}``: slots for frozen copies of ``main``. A
  slot is empty until a snapshot is written into it; when every slot is full
  the oldest snapshot is overwritten. Slots are never added or removed at run
  time, so an episode in flight never meets a module that has gone, and a
  checkpoint always holds the same set of modules;
* ``bot_<name>``: the seed bots as fixed `policies.modules.BotRLModule`.

Each episode's seats are drawn by the `Matchmaker`: one seat (chosen at
random) is always ``main``, so every episode trains it; every other seat is
``main`` with weight ``main``, a snapshot with weight ``snapshots`` (uniform
over the filled slots; the weight goes to ``main`` while none is filled) or a
bot with weight ``bots`` (uniform over the bots). The draw is a pure function
of the episode id, so all seats of an episode agree wherever they are asked.

The league issue extends this: rating-weighted choices replace the uniform
ones inside `Matchmaker.opponent_weights`, and a store decides which
snapshots occupy the slots.
"""
from __future__ import annotations

import dataclasses
import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field

MAIN = "main"
SNAPSHOT_PREFIX = "snapshot_"
BOT_PREFIX = "bot_"


def snapshot_id(slot: int) -> str:
    return f"{SNAPSHOT_PREFIX}{slot}"


def bot_module_id(bot: str) -> str:
    return f"{BOT_PREFIX}{bot}"


@dataclass(frozen=True)
class Matchup:
    """The module id of every seat of one episode, seat 0 first."""

    modules: tuple[str, ...]

    @property
    def learner_seats(self) -> tuple[int, ...]:
        return tuple(s for s, m in enumerate(self.modules) if m == MAIN)


@dataclass(frozen=True)
class Matchmaker:
    """Draws a `Matchup` per episode; picklable, so RLlib ships it to every EnvRunner as the mapping function."""

    players: int
    snapshots: tuple[str, ...] = ()
    """Filled snapshot slots, oldest first."""
    bots: tuple[str, ...] = ()
    """Bot module ids."""
    main_weight: float = 0.5
    snapshot_weight: float = 0.3
    bot_weight: float = 0.2
    seed: int = 0

    def opponent_weights(self) -> dict[str, float]:
        """Chance that a non-learner seat is played by each module."""
        weights: dict[str, float] = {MAIN: self.main_weight}
        snap = self.snapshot_weight if self.snapshots else 0.0
        if not self.snapshots:
            weights[MAIN] += self.snapshot_weight
        bots = self.bot_weight if self.bots else 0.0
        if not self.bots:
            weights[MAIN] += self.bot_weight
        for module in self.snapshots:
            weights[module] = snap / len(self.snapshots)
        for module in self.bots:
            weights[module] = bots / len(self.bots)
        total = sum(weights.values())
        return {m: w / total for m, w in weights.items()}

    def matchup(self, episode_key: str) -> Matchup:
        # crc32, not hash(): str hashes differ between processes.
        rng = random.Random(zlib.crc32(f"{self.seed}:{episode_key}".encode()))
        weights = self.opponent_weights()
        modules, probabilities = list(weights), list(weights.values())
        seats = [rng.choices(modules, probabilities)[0] for _ in range(self.players)]
        seats[rng.randrange(self.players)] = MAIN
        return Matchup(tuple(seats))

    def __call__(self, agent_id: str, episode, **kwargs) -> str:
        """RLlib's agent-to-module mapping: ``seat_<i>`` of `episode` -> module id."""
        seat = int(str(agent_id).rpartition("_")[2])
        return self.matchup(str(episode.id_)).modules[seat]


@dataclass
class PoolState:
    """What a checkpoint must remember about the pool: which iteration each slot holds."""

    slot_iterations: list[int | None] = field(default_factory=list)
    """Per slot, the training iteration its snapshot was taken at (None: empty)."""
    snapshots_taken: int = 0

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "PoolState":
        return cls(**data)


class SnapshotPool:
    """Driver-side bookkeeping of the slots; it writes weights into them and tells the EnvRunners."""

    def __init__(self, players: int, slots: int, bots: Sequence[str], *, main_weight: float,
                 snapshot_weight: float, bot_weight: float, seed: int, state: PoolState | None = None):
        self.players = players
        self.slots = slots
        self.bot_modules = tuple(bot_module_id(b) for b in bots)
        self.weights = (main_weight, snapshot_weight, bot_weight)
        self.seed = seed
        self.state = state or PoolState(slot_iterations=[None] * slots)
        if len(self.state.slot_iterations) != slots:
            raise ValueError(
                f"the run was saved with {len(self.state.slot_iterations)} snapshot slots, "
                f"league.max_snapshots is {slots}: resume with the same value"
            )

    @property
    def module_ids(self) -> list[str]:
        """Every module of the pool besides ``main``."""
        return [snapshot_id(s) for s in range(self.slots)] + list(self.bot_modules)

    @property
    def filled(self) -> list[str]:
        """Filled slots, oldest snapshot first."""
        order = sorted((it, s) for s, it in enumerate(self.state.slot_iterations) if it is not None)
        return [snapshot_id(s) for _, s in order]

    def __len__(self) -> int:
        return len(self.filled)

    def matchmaker(self) -> Matchmaker:
        main, snap, bots = self.weights
        return Matchmaker(self.players, tuple(self.filled), self.bot_modules, main, snap, bots, self.seed)

    def next_slot(self) -> int:
        """An empty slot, or else the one holding the oldest snapshot."""
        for slot, it in enumerate(self.state.slot_iterations):
            if it is None:
                return slot
        return min(range(self.slots), key=lambda s: self.state.slot_iterations[s])

    def record(self, slot: int, iteration: int) -> None:
        self.state.slot_iterations[slot] = iteration
        self.state.snapshots_taken += 1
