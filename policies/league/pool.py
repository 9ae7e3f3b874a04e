"""The self-play opponent pool: `Matchup`, `Matchmaker` and `SnapshotPool`.

Module ids (one RLModule each, all built when the algorithm is built):

* ``main``: the learning policy, the only one trained;
* ``snapshot_0`` .. ``snapshot_{K-1}``: slots for frozen copies of ``main``. A
  slot is empty until a snapshot is written into it; when every slot is full
  the oldest snapshot is overwritten. Slots are never added or removed at run
  time, so an episode in flight never meets a module that has gone, and a
  checkpoint always holds the same set of modules;
* ``bot_<name>``: the seed bots as fixed `policies.modules.BotRLModule`;
* ``<role>_<i>``: the learners of each role besides main (`policies.league.roles`; ``league=alphastar``'s
  ``main_exploiter_0`` and ``league_exploiter_0``), trained like ``main`` in the same run, each on its own games.

Besides modules, the batched sampler (`launch.training.sampler`) seats the league's
*external* members, which are no RLModule (another run's PPO or DQN, a
TD(lambda) value, a search player, a GA network, a ``py:`` bot), by their
member name; they answer through `policies.players`.

Each episode's seats are drawn by the `Matchmaker`, which reads the role table (`policies.league.roles.ROLES`)
and names no role. With learners besides main, a game first draws its *learner*: one of a role's learners
(uniformly) with the chance of that role's share (``main_exploiter_share``, ...), the roles in the table's order,
else ``main``; without them nothing is drawn for it, so a league without roles uses its random stream for the
seats alone. The learner's role then draws every seat (its ``opponents``: as main's, below, or the current
``main`` and main's own snapshots), and the learner takes one of them (chosen at random), so every episode trains
its learner. Main's opponents: every seat is
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policies.league import roles
from policies.league.roles import MAIN, role_of  # noqa: F401 (role_of: a learner's module id -> its role)

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
    learner: str = MAIN
    """The module this game trains (main, or the exploiter whose game it is)."""

    @property
    def learner_seats(self) -> tuple[int, ...]:
        return tuple(s for s, m in enumerate(self.modules) if m == self.learner)


@roles.takes_role_settings(roles.seating_defaults)
@dataclass(frozen=True)
class Matchmaker:
    """Draws a `Matchup` per episode; picklable, so RLlib ships it to every EnvRunner as the mapping function.

    Besides the fields below it takes, as keywords, what it seats of each role besides main
    (`policies.league.roles.seating_defaults`): the role's learners' module ids under its count key
    (``main_exploiters=("main_exploiter_0",)``), its share (``main_exploiter_share=0.2``) and the settings of whom it
    plays (``main_exploiter_snapshot_weight``), each read back as an attribute."""

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
    main_snapshots: tuple[str, ...] = ()
    """The filled slots that hold main's own snapshots (a frozen learner of another role's do not): what a role that
    plays the current main (`policies.league.roles.CurrentMain`) meets besides main."""
    role_settings: Mapping[str, Any] = field(default_factory=dict)
    """What it seats of each role besides main, by key (class docstring)."""

    def _groups(self):
        return ((self.snapshots, self.snapshot_priorities, self.snapshot_weight, "snapshot"),
                (self.bots, self.bot_priorities, self.bot_weight, "bot"),
                (self.externals, self.external_priorities, self.external_weight, "external"))

    def __post_init__(self):
        for modules, priorities, _, what in self._groups():
            if priorities and (len(priorities) != len(modules) or min(priorities) < 0):
                raise ValueError(f"{what}_priorities must give one weight >= 0 per {what}: got {priorities}")
        learner_roles = roles.learner_roles()
        learners = {role.name: tuple(self.role_settings[role.count.key]) for role in learner_roles}
        roles.check(self.role_settings, counts={name: len(ids) for name, ids in learners.items()})
        # The roles themselves travel with the matchmaker: an EnvRunner seats what the driver's table says.
        object.__setattr__(self, "_main", roles.role_named(MAIN))
        object.__setattr__(self, "_learners", tuple((role, learners[role.name], self.role_settings[role.share.key])
                                                    for role in learner_roles if learners[role.name]))

    def opponent_weights(self) -> dict[str, float]:
        """Chance that a seat of main's game (or of a role that plays as main does) is played by each module."""
        weights: dict[str, float] = {MAIN: self.main_weight}
        for modules, priorities, share, what in self._groups():
            priorities = priorities if sum(priorities) > 0 else (1.0,) * len(modules)
            if not modules:
                if what != "external":  # nobody to play the share yet: main plays it
                    weights[MAIN] += share
                continue  # an empty external share is left out, so the other shares keep their proportions
            for module, priority in zip(modules, priorities):
                weights[module] = share * priority / sum(priorities)
        total = sum(weights.values())
        if total <= 0:  # only externals had a share and every one was dropped mid-run: main plays on alone
            return {MAIN: 1.0}
        return {m: w / total for m, w in weights.items()}

    def matchup(self, episode_key: str) -> Matchup:
        # crc32, not hash(): str hashes differ between processes.
        rng = random.Random(zlib.crc32(f"{self.seed}:{episode_key}".encode()))
        learner, role = self._learner(rng)
        seats = role.opponents.seats(self, rng)
        seats[rng.randrange(self.players)] = learner
        return Matchup(tuple(seats), learner)

    def _learner(self, rng: random.Random) -> tuple[str, roles.Role]:
        """Whose game this is, and its role. Without learners besides main it draws nothing, so the seats are those
        a league without roles always drew for the same key."""
        if not self._learners:
            return MAIN, self._main
        draw, reached = rng.random(), 0.0
        for role, learners, share in self._learners:
            reached += share
            if draw < reached:
                return rng.choice(learners), role
        return MAIN, self._main

    def __call__(self, agent_id: str, episode, **kwargs) -> str:
        """RLlib's agent-to-module mapping: ``seat_<i>`` of `episode` -> module id."""
        seat = int(str(agent_id).rpartition("_")[2])
        return self.matchup(str(episode.id_)).modules[seat]


class SnapshotPool:
    """The RLlib side of the league: the module ids that exist for the whole run, and which slots are filled.

    `learner_counts` are the counts of the roles besides main by their count keys (``main_exploiters=1``,
    `policies.league.roles`); a role not given has none."""

    def __init__(self, players: int, slots: int, bots: Sequence[str], **learner_counts: int):
        self.players = players
        self.slots = slots
        self.bot_modules = tuple(bot_module_id(b) for b in bots)
        counts = {role.count.key: 0 for role in roles.learner_roles()}
        unknown = sorted(set(learner_counts) - set(counts))
        if unknown:
            raise TypeError(f"SnapshotPool() got unknown learner counts {', '.join(unknown)}: the roles' are "
                            f"{', '.join(counts)}")
        self.learners: dict[str, tuple[str, ...]] = roles.learners(counts | learner_counts)
        """Each role besides main -> its learners' module ids."""
        self.filled_slots: dict[int, int] = {}
        """Filled slot -> the training iteration its snapshot was taken at."""

    @property
    def module_ids(self) -> list[str]:
        """Every module of the pool besides ``main``."""
        return [snapshot_id(s) for s in range(self.slots)] + list(self.bot_modules) + list(self.exploiters)

    @property
    def exploiters(self) -> tuple[str, ...]:
        """The module ids of the learners besides main (the exploiters), by role in the table's order."""
        return tuple(module_id for ids in self.learners.values() for module_id in ids)

    @property
    def trainable(self) -> list[str]:
        """The modules the learner trains: main and every exploiter."""
        return [MAIN, *self.exploiters]

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
