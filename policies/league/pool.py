"""The self-play opponent pool: `Matchup`, `Matchmaker` and `SnapshotPool`.

Module ids (one RLModule each, all built when the algorithm is built):

* ``main``: the learning policy, the only one trained;
* ``snapshot_0`` .. ``snapshot_{K-1}``: slots for frozen copies of ``main``. A
  slot is empty until a snapshot is written into it; when every slot is full
  the oldest snapshot is overwritten. Slots are never added or removed at run
  time, so an episode in flight never meets a module that has gone, and a
  checkpoint always holds the same set of modules;
* ``bot_<name>``: the seed bots as fixed `policies.modules.BotRLModule`.

Besides modules, the batched sampler (`launch.training.sampler`) seats the league's
*external* members, which are no RLModule (another run's PPO or DQN, a
TD(lambda) value, a search player, a GA network, a ``py:`` bot), by their
member name; they answer through `policies.players`.

Each episode's seats are drawn by the `Matchmaker`: one seat (chosen at
random) is always ``main``, so every episode trains it; every other seat is
``main`` with weight ``main``, a snapshot with weight ``snapshots`` (the
weight goes to ``main`` while no slot is filled), a bot with weight
``bots`` or an external member with weight ``externals`` (a league without externals leaves
that share out).
Within each group the choice follows the ``*_priorities`` (uniform when none
are given); `policies.league.league`
sets them by prioritized fictitious self-play and decides which snapshot
occupies which slot. The draw is a pure function of the episode id, so all
seats of an episode agree wherever they are asked.
"""
from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

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
    snapshot_priorities: tuple[float, ...] = ()
    """Relative chance of each snapshot within the snapshot share (empty: uniform)."""
    bot_priorities: tuple[float, ...] = ()
    """Relative chance of each bot within the bot share (empty: uniform)."""
    externals: tuple[str, ...] = ()
    """League members that are not modules, by member name (only the batched sampler can seat them)."""
    external_weight: float = 0.0
    external_priorities: tuple[float, ...] = ()
    """Relative chance of each external within the external share (empty: uniform)."""

    def _groups(self):
        return ((self.snapshots, self.snapshot_priorities, self.snapshot_weight, "snapshot"),
                (self.bots, self.bot_priorities, self.bot_weight, "bot"),
                (self.externals, self.external_priorities, self.external_weight, "external"))

    def __post_init__(self):
        for modules, priorities, _, what in self._groups():
            if priorities and (len(priorities) != len(modules) or min(priorities) < 0):
                raise ValueError(f"{what}_priorities must give one weight >= 0 per {what}: got {priorities}")

    def opponent_weights(self) -> dict[str, float]:
        """Chance that a non-learner seat is played by each module."""
        weights: dict[str, float] = {MAIN: self.main_weight}
        for modules, priorities, share, what in self._groups():
            priorities = priorities if sum(priorities) > 0 else (1.0,) * len(modules)
            if not modules:
                if what != "external":  # nobody to play the share yet: main plays it
                    weights[MAIN] += share
                continue  # a league without externals draws as it did before they could sit
            for module, priority in zip(modules, priorities):
                weights[module] = share * priority / sum(priorities)
        total = sum(weights.values())
        if total <= 0:  # only externals had a share and every one was dropped mid-run: main plays on alone
            return {MAIN: 1.0}
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


class SnapshotPool:
    """The RLlib side of the league: the module ids that exist for the whole run, and which slots are filled."""

    def __init__(self, players: int, slots: int, bots: Sequence[str]):
        self.players = players
        self.slots = slots
        self.bot_modules = tuple(bot_module_id(b) for b in bots)
        self.filled_slots: dict[int, int] = {}
        """Filled slot -> the training iteration its snapshot was taken at."""

    @property
    def module_ids(self) -> list[str]:
        """Every module of the pool besides ``main``."""
        return [snapshot_id(s) for s in range(self.slots)] + list(self.bot_modules)

    @property
    def filled(self) -> list[str]:
        """Filled slots, oldest snapshot first."""
        return [snapshot_id(s) for s, _ in sorted(self.filled_slots.items(), key=lambda item: (item[1], item[0]))]

    def __len__(self) -> int:
        return len(self.filled_slots)

    def fill(self, slot: int, iteration: int) -> None:
        if not 0 <= slot < self.slots:
            raise ValueError(f"snapshot slot {slot} does not exist: the run has {self.slots} (league.max_snapshots)")
        self.filled_slots[slot] = iteration
