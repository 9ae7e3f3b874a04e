"""The self-play opponent pool: `Matchup`, `Matchmaker` and `SnapshotPool`.

Module ids (one RLModule each, all built when the algorithm is built):

* ``main``: the learning policy, the only one trained;
* ``snapshot_0`` .. ``snapshot_{K-1}``: slots for frozen copies of ``main``. A
  slot is empty until a snapshot is written into it; when every slot is full
  the oldest snapshot is overwritten. Slots are never added or removed at run
  time, so an episode in flight never meets a module that has gone, and a
  checkpoint always holds the same set of modules;
* ``bot_<name>``: the seed bots as fixed `policies.modules.BotRLModule`;
* ``main_exploiter_<i>``, ``league_exploiter_<i>`` (``league=alphastar``): AlphaStar's exploiters, trained
  like ``main`` in the same run, each on its own games.

Besides modules, the batched sampler (`launch.training.sampler`) seats the league's
*external* members, which are no RLModule (another run's PPO or DQN, a
TD(lambda) value, a search player, a GA network, a ``py:`` bot), by their
member name; they answer through `policies.players`.

Each episode's seats are drawn by the `Matchmaker`. With exploiters, a game first draws its *learner*: a main
exploiter with chance ``main_exploiter_share`` (one of them, uniformly), a league exploiter with chance
``league_exploiter_share``, else ``main``; without exploiters nothing is drawn for it, so a league without
roles uses its random stream for the seats alone. The learner takes one seat (chosen at random). A main exploiter's
other seats are the current ``main``, or one of main's own snapshots with weight
``main_exploiter_snapshot_weight``; a league exploiter's are drawn like main's opponents, below. In a main game
one seat (chosen at random) is always ``main``, so every episode trains it; every other seat is
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
MAIN_EXPLOITER = "main_exploiter"
LEAGUE_EXPLOITER = "league_exploiter"
ROLES = (MAIN, MAIN_EXPLOITER, LEAGUE_EXPLOITER)
"""The learners' roles (AlphaStar): main, main exploiters (against main only), league exploiters (against all)."""


def snapshot_id(slot: int) -> str:
    return f"{SNAPSHOT_PREFIX}{slot}"


def bot_module_id(bot: str) -> str:
    return f"{BOT_PREFIX}{bot}"


def exploiter_id(role: str, index: int) -> str:
    """The module id of exploiter `index` of `role` (``main_exploiter_0``)."""
    if role not in (MAIN_EXPLOITER, LEAGUE_EXPLOITER):
        raise ValueError(f"{role!r} is no exploiter role: choose {MAIN_EXPLOITER} or {LEAGUE_EXPLOITER}")
    return f"{role}_{index}"


def role_of(module_id: str) -> str:
    """The role of a trainable module id (`ROLES`); anything else raises."""
    if module_id == MAIN:
        return MAIN
    role, _, index = module_id.rpartition("_")
    if role in (MAIN_EXPLOITER, LEAGUE_EXPLOITER) and index.isdigit():
        return role
    raise ValueError(f"{module_id!r} is no learner's module id: main, main_exploiter_<i> or league_exploiter_<i>")


@dataclass(frozen=True)
class Matchup:
    """The module id of every seat of one episode, seat 0 first."""

    modules: tuple[str, ...]
    learner: str = MAIN
    """The module this game trains (main, or the exploiter whose game it is)."""

    @property
    def learner_seats(self) -> tuple[int, ...]:
        return tuple(s for s, m in enumerate(self.modules) if m == self.learner)


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
    main_exploiters: tuple[str, ...] = ()
    """Main exploiters' module ids: each plays its games against the current main."""
    league_exploiters: tuple[str, ...] = ()
    """League exploiters' module ids: each plays its games against opponents drawn as main's are."""
    main_exploiter_share: float = 0.0
    """Share of games whose learner is a main exploiter (split evenly among them)."""
    league_exploiter_share: float = 0.0
    """Share of games whose learner is a league exploiter (split evenly among them)."""
    main_snapshots: tuple[str, ...] = ()
    """The filled slots that hold main's own snapshots (a frozen exploiter's do not): a main exploiter's
    opponents besides main."""
    main_exploiter_snapshot_weight: float = 0.0
    """Share of a main exploiter's opponent seats that are main's snapshots (uniformly); the rest are main."""

    def _groups(self):
        return ((self.snapshots, self.snapshot_priorities, self.snapshot_weight, "snapshot"),
                (self.bots, self.bot_priorities, self.bot_weight, "bot"),
                (self.externals, self.external_priorities, self.external_weight, "external"))

    def __post_init__(self):
        for modules, priorities, _, what in self._groups():
            if priorities and (len(priorities) != len(modules) or min(priorities) < 0):
                raise ValueError(f"{what}_priorities must give one weight >= 0 per {what}: got {priorities}")
        for exploiters, share, role in ((self.main_exploiters, self.main_exploiter_share, MAIN_EXPLOITER),
                                        (self.league_exploiters, self.league_exploiter_share, LEAGUE_EXPLOITER)):
            if not 0 <= share <= 1 or bool(exploiters) != (share > 0):
                raise ValueError(f"{role}_share={share} needs {role}s, and {role}s a share in (0, 1]")
        if self.main_exploiter_share + self.league_exploiter_share >= 1:
            raise ValueError("the exploiters' shares of the games leave main none: they must add up to less than 1")

    def opponent_weights(self) -> dict[str, float]:
        """Chance that a non-learner seat is played by each module."""
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
        learner = self._learner(rng)
        if learner in self.main_exploiters:
            seats = [self._main_exploiter_opponent(rng) for _ in range(self.players)]
        else:  # main's game or a league exploiter's: opponents by the league's weights
            weights = self.opponent_weights()
            modules, probabilities = list(weights), list(weights.values())
            seats = [rng.choices(modules, probabilities)[0] for _ in range(self.players)]
        seats[rng.randrange(self.players)] = learner
        return Matchup(tuple(seats), learner)

    def _learner(self, rng: random.Random) -> str:
        """Whose game this is. Without exploiters it draws nothing, so the seats are those a league without roles
        always drew for the same key."""
        if not (self.main_exploiters or self.league_exploiters):
            return MAIN
        draw = rng.random()
        if draw < self.main_exploiter_share:
            return rng.choice(self.main_exploiters)
        if draw < self.main_exploiter_share + self.league_exploiter_share:
            return rng.choice(self.league_exploiters)
        return MAIN

    def _main_exploiter_opponent(self, rng: random.Random) -> str:
        if self.main_snapshots and rng.random() < self.main_exploiter_snapshot_weight:
            return rng.choice(self.main_snapshots)
        return MAIN

    def __call__(self, agent_id: str, episode, **kwargs) -> str:
        """RLlib's agent-to-module mapping: ``seat_<i>`` of `episode` -> module id."""
        seat = int(str(agent_id).rpartition("_")[2])
        return self.matchup(str(episode.id_)).modules[seat]


class SnapshotPool:
    """The RLlib side of the league: the module ids that exist for the whole run, and which slots are filled."""

    def __init__(self, players: int, slots: int, bots: Sequence[str], main_exploiters: int = 0,
                 league_exploiters: int = 0):
        self.players = players
        self.slots = slots
        self.bot_modules = tuple(bot_module_id(b) for b in bots)
        self.main_exploiters = tuple(exploiter_id(MAIN_EXPLOITER, i) for i in range(main_exploiters))
        self.league_exploiters = tuple(exploiter_id(LEAGUE_EXPLOITER, i) for i in range(league_exploiters))
        self.filled_slots: dict[int, int] = {}
        """Filled slot -> the training iteration its snapshot was taken at."""

    @property
    def module_ids(self) -> list[str]:
        """Every module of the pool besides ``main``."""
        return [snapshot_id(s) for s in range(self.slots)] + list(self.bot_modules) + list(self.exploiters)

    @property
    def exploiters(self) -> tuple[str, ...]:
        """The exploiters' module ids, main exploiters first."""
        return self.main_exploiters + self.league_exploiters

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
