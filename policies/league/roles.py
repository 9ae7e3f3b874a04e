"""The league's roles as data: one `Role` per kind of learner in `ROLES`, read by everything that seats, trains,
freezes, resets or evicts one.

A *role* is a kind of learner in a training league. ``main`` is the learner a run is for; AlphaStar's exploiters
learn beside it in the same run, each an RLlib module of its own named ``<role>_<i>`` (``main_exploiter_0``) and
built as main is. Each entry says:

* ``opponents``: whom its learners meet at the other seats of their games (`LeagueMix`: as main does, by the
  league's weights and PFSP; `CurrentMain`: the current main, or main's own snapshots);
* ``count`` and ``share``: how many learners it has and what share of the training games is theirs, split evenly
  among them (main has one learner and keeps the games the other roles leave);
* ``freeze``: when a learner of it joins the league as a frozen snapshot (`Periodic`: main's snapshot rule;
  `AheadOrBudget`: from its own training games);
* ``reset``: whether it then restarts, and from what (`Never`; `Restart`, from one of `STARTS`), which is also how
  it starts a run;
* ``eviction``: which active snapshot a newly frozen member of it evicts when every snapshot slot is taken
  (`OwnRoleFirst`).

Every number or name a rule reads is a `Setting`, declared once with its default, the values it allows and what it
means. They are the ``league.<key>`` settings of ``conf/league`` and of the train.py schema's ``LeagueConfig``, and
keywords of `policies.league.league.LeagueSettings` (`takes_role_settings`); `check` is their one check, which the
schema, the league's settings and the matchmaker call.

Adding a role is one entry here and its test (and a ``conf/league`` choice that turns it on): the matchmaker
(`policies.league.pool`), the league (`policies.league.league`), the builder (`launch.training.build`), the schema
(`launch.training.schema`) and the trainer (`launch.training.trainers.rllib`) read this table and name no role. A
rule an entry needs that is not here yet is a small frozen dataclass with the methods of its kind (`Opponents`,
`LearnerFreeze`, `ResetRule`, `EvictionRule`). An unknown role name is a ValueError of one line (`role_named`).
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from policies.ranges import AT_LEAST_ONE, SHARE, Range

MAIN = "main"
"""The learner a run is for: its role, its module id and its member name."""
MAX_LEARNERS = 64
"""Learners of one role at most: each is a trainable module on the learner and a forward pass per sampler step."""


@dataclass(frozen=True)
class Setting:
    """A league setting a role's rules read: ``league.<key>`` in ``conf/league`` and the train.py schema, and a
    keyword of `policies.league.league.LeagueSettings`. Declared once, with its default, what it allows (a `Range`,
    or the names it may take) and what it means."""

    key: str
    default: Any
    allowed: Range | tuple[str, ...]
    doc: str

    @property
    def type(self) -> type:
        """What the setting holds: its default's type (int, float or str)."""
        return type(self.default)

    def check(self, value: Any, prefix: str = "") -> None:
        """A ValueError of one line naming ``<prefix><key>``, `value` and what is allowed, unless it is allowed."""
        name = f"{prefix}{self.key}"
        if not isinstance(self.allowed, Range):
            if value not in self.allowed:
                raise ValueError(f"{name}={value} is not known: choose from {', '.join(self.allowed)}")
            return
        self.allowed.check(name, value)
        if self.type is int and not isinstance(value, int):
            raise ValueError(f"{name}={value!r} is not allowed: give a whole number ({self.allowed.text()})")


# ---------------------------------------------------------------- the kinds of rule an entry is made of
class Opponents(Protocol):
    """Whom a learner of the role meets at the other seats of its games."""

    @property
    def settings(self) -> tuple[Setting, ...]:
        """The settings it reads (the matchmaker holds their values)."""

    def seats(self, matchmaker: Any, rng: Any) -> list[str]:
        """A module id (or external member name) for each of the game's ``matchmaker.players`` seats, drawn from
        `rng` alone, so a game's seats are a function of its key; the learner then takes one of them."""


class MainFreeze(Protocol):
    """When main is frozen into the league: asked at the end of every training iteration (`League.snapshot_due`)."""

    settings: tuple[Setting, ...]

    def due(self, settings: Any, iteration: int, last_snapshot_iteration: int | None, last_round: Any,
            own_round: Any) -> bool:
        """Whether main is frozen now."""


class LearnerFreeze(Protocol):
    """When a learner of a role besides main is frozen into the league: asked every training iteration with its
    progress since its last reset (`policies.league.league.ExploiterProgress`: its own decisions and games)."""

    settings: tuple[Setting, ...]

    def reason(self, values: Mapping[str, Any], progress: Any) -> str | None:
        """Why it is frozen now, in words for the training log; None while it is not."""


class ResetRule(Protocol):
    """Whether a learner restarts once frozen, and from what (one of `STARTS`, or None: where it is)."""

    settings: tuple[Setting, ...]

    def resets(self, values: Mapping[str, Any], draw: float) -> bool:
        """Whether it restarts; `draw` is uniform in [0, 1), the same on a resumed run."""

    def start(self, values: Mapping[str, Any]) -> str | None:
        """What it starts a run from and restarts from."""


class EvictionRule(Protocol):
    """Which active snapshot a newly frozen member of the role evicts when every snapshot slot is taken."""

    def evicts(self, role: str, members: Iterable[Any]) -> Any:
        """One of `members` (`policies.league.store.Member`, active snapshots in their slots) to evict."""


STARTS = {"initial": "its initial weights", "main": "a copy of main"}
"""What a learner may start and restart from, with the words the training log uses: ``initial``, its weights as
built (kept in ``<run>/league/initial/<module>/``), or ``main``, a copy of main's weights at that moment."""


# ---------------------------------------------------------------- whom a role plays
@dataclass(frozen=True)
class LeagueMix:
    """Opponents drawn as main's are: each seat is main itself, a snapshot, a bot or an external member by the
    league's weights (``main_weight``, ``snapshot_weight``, ``bot_weight``, ``external_weight``), within each group by
    PFSP over main's records (`policies.league.pool.Matchmaker.opponent_weights`)."""

    @property
    def settings(self) -> tuple[Setting, ...]:
        return ()

    def seats(self, matchmaker: Any, rng: Any) -> list[str]:
        weights = matchmaker.opponent_weights()
        modules, chances = list(weights), list(weights.values())
        return [rng.choices(modules, chances)[0] for _ in range(matchmaker.players)]


@dataclass(frozen=True)
class CurrentMain:
    """The current main at every seat, or with chance `snapshot_weight` one of main's own snapshots, uniformly (never
    a frozen learner of another role): a learner that looks for main's weaknesses."""

    snapshot_weight: Setting

    @property
    def settings(self) -> tuple[Setting, ...]:
        return (self.snapshot_weight,)

    def seats(self, matchmaker: Any, rng: Any) -> list[str]:
        chance = matchmaker.role_settings[self.snapshot_weight.key]
        snapshots = matchmaker.main_snapshots
        return [rng.choice(snapshots) if snapshots and rng.random() < chance else MAIN
                for _ in range(matchmaker.players)]


# ---------------------------------------------------------------- when a role is frozen
@dataclass(frozen=True)
class Periodic:
    """Main's snapshot rule, from the league's own settings: frozen every ``snapshot_every`` training iterations, or
    earlier when in a rating round it finished ahead of the league's other members ``snapshot_win_rate`` of the
    time (None: off); never with ``max_snapshots=0``. One good round freezes main once."""

    settings: tuple[Setting, ...] = ()

    def due(self, settings: Any, iteration: int, last_snapshot_iteration: int | None, last_round: Any,
            own_round: Any) -> bool:
        """`own_round`: the league's own round, played at the end of an iteration; `last_round`: a round played
        beside training whose result arrives iterations later, given once, when it does (then only the win-rate
        rule is asked, about that round)."""
        if not settings.max_snapshots:
            return False
        if last_round is None and settings.snapshot_every and iteration % settings.snapshot_every == 0:
            return True
        # One good round freezes main once: its own round only at its iteration, and none that main was frozen
        # at or after.
        if last_round is None:
            last = own_round
            fresh = last is not None and last.iteration == iteration and last_snapshot_iteration != iteration
        else:
            last = last_round
            fresh = last.iteration is not None and (last_snapshot_iteration is None
                                                    or last_snapshot_iteration < last.iteration)
        return (settings.snapshot_win_rate is not None and fresh and last.main_vs_league is not None
                and last.main_vs_league >= settings.snapshot_win_rate)


@dataclass(frozen=True)
class AheadOrBudget:
    """Frozen from its own training games since its last reset: when over at least `min_games` of them it finished
    ahead of its opponents' seats `ahead` of the time, or after `budget` of its own decisions, however it does."""

    ahead: Setting
    min_games: Setting
    budget: Setting

    @property
    def settings(self) -> tuple[Setting, ...]:
        return (self.ahead, self.min_games, self.budget)

    def reason(self, values: Mapping[str, Any], progress: Any) -> str | None:
        rate = progress.ahead_rate
        if progress.games >= values[self.min_games.key] and rate is not None and rate >= values[self.ahead.key]:
            return f"ahead of its opponents {rate:.0%} of the time over {progress.games:,} games"
        if progress.decisions >= values[self.budget.key]:
            return f"its step budget spent ({progress.decisions:,} decisions)"
        return None


# ---------------------------------------------------------------- what a frozen learner does next
@dataclass(frozen=True)
class Never:
    """Goes on learning from where it is (main)."""

    settings: tuple[Setting, ...] = ()

    def resets(self, values: Mapping[str, Any], draw: float) -> bool:
        return False

    def start(self, values: Mapping[str, Any]) -> str | None:
        return None


@dataclass(frozen=True)
class Restart:
    """Restarts once frozen, with chance `chance` (None: always), from what `start_from` names (`STARTS`), which is
    also what it starts a run from."""

    start_from: Setting
    chance: Setting | None = None

    @property
    def settings(self) -> tuple[Setting, ...]:
        return (self.start_from,) if self.chance is None else (self.start_from, self.chance)

    def resets(self, values: Mapping[str, Any], draw: float) -> bool:
        return self.chance is None or draw < values[self.chance.key]

    def start(self, values: Mapping[str, Any]) -> str | None:
        return values[self.start_from.key]


# ---------------------------------------------------------------- whom a newly frozen member evicts
@dataclass(frozen=True)
class OwnRoleFirst:
    """The lowest-rated (mu; the oldest on a tie) active snapshot of the new member's own role, else main's lowest,
    else the lowest of all. So a frozen exploiter leaves only for a newer one of its role: it is often the
    lowest-rated member, and main's next snapshot must not evict it before main has trained against it; main's
    snapshots keep the other slots. (Not the lowest mu - 3 sigma: frozen members' sigma shrinks with their games,
    so that would evict the newest snapshots, which have played least, however strong.)"""

    def evicts(self, role: str, members: Iterable[Any]) -> Any:
        members = list(members)
        candidates = [m for m in members if m.role == role] or [m for m in members if m.role == MAIN] or members
        return min(candidates, key=lambda m: (m.mu, m.iteration or 0))


# ---------------------------------------------------------------- the entry
@dataclass(frozen=True)
class Role:
    """One kind of learner (module docstring)."""

    name: str
    """Its learners' module ids (``<name>_<i>``), its frozen members' names (``<name>_<i>@<iteration>``) and the
    role the league database and the dashboard show."""
    opponents: Opponents
    freeze: MainFreeze | LearnerFreeze
    reset: ResetRule
    eviction: EvictionRule = OwnRoleFirst()
    count: Setting | None = None
    """How many learners it has; None: main, the one learner every run has."""
    share: Setting | None = None
    """Its share of the training games (so of the env steps), split evenly among its learners; None: main, which
    keeps what the other roles leave."""

    @property
    def settings(self) -> tuple[Setting, ...]:
        """Every setting it reads, each once."""
        own = [s for s in (self.count, self.share) if s is not None]
        return tuple(dict.fromkeys([*own, *self.opponents.settings, *self.freeze.settings, *self.reset.settings]))

    def learner_ids(self, count: int) -> tuple[str, ...]:
        """The module ids of its `count` learners: ``main`` for main."""
        return (MAIN,) if self.count is None else tuple(f"{self.name}_{i}" for i in range(count))


# ---------------------------------------------------------------- the table
EXPLOITER_FREEZE = AheadOrBudget(
    ahead=Setting("exploiter_freeze_ahead", 0.7, Range(0, 1, low_open=True),
                  "Freeze an exploiter into the league when, in its training games since its last reset, it finished "
                  "ahead of its opponents' seats this often (a main exploiter's opponents are main)..."),
    min_games=Setting("exploiter_min_games", 200, AT_LEAST_ONE, "... over at least this many finished games."),
    budget=Setting("exploiter_step_budget", 1_000_000, AT_LEAST_ONE,
                   "Or freeze it after this many of its own decisions since its last reset, however it does."))
"""The AlphaStar exploiters' freeze rule, with settings both read."""
EXPLOITER_START = Setting("exploiter_reset_to", "initial", tuple(STARTS),
                          "What an exploiter starts and restarts from (`policies.league.roles.STARTS`): ``initial``, "
                          "its weights as built (kept in ``<run>/league/initial``), or ``main``, a copy of main's "
                          "weights at that moment.")

MAIN_EXPLOITER = "main_exploiter"
LEAGUE_EXPLOITER = "league_exploiter"

ROLES: dict[str, Role] = {role.name: role for role in (
    Role(MAIN, opponents=LeagueMix(), freeze=Periodic(), reset=Never()),
    Role(MAIN_EXPLOITER,
         count=Setting("main_exploiters", 0, Range(0, MAX_LEARNERS),
                       "Main exploiters (``league=alphastar``): learners trained only against the current main (RLlib "
                       "modules ``main_exploiter_<i>``)."),
         share=Setting("main_exploiter_share", 0.0, SHARE,
                       "Share of the training games (so of the env steps) that are main exploiters' games, split "
                       "evenly among them; main keeps what the other roles' shares leave."),
         opponents=CurrentMain(Setting("main_exploiter_snapshot_weight", 0.0, SHARE,
                                       "Share of a main exploiter's opponent seats that are main's own snapshots "
                                       "(uniformly); the rest are the current main.")),
         freeze=EXPLOITER_FREEZE, reset=Restart(EXPLOITER_START)),
    Role(LEAGUE_EXPLOITER,
         count=Setting("league_exploiters", 0, Range(0, MAX_LEARNERS),
                       "League exploiters: learners trained against opponents drawn as main's are "
                       "(``league_exploiter_<i>``)."),
         share=Setting("league_exploiter_share", 0.0, SHARE,
                       "Share of the training games that are league exploiters' games, split evenly among them."),
         opponents=LeagueMix(), freeze=EXPLOITER_FREEZE,
         reset=Restart(EXPLOITER_START, chance=Setting("league_exploiter_reset", 0.25, SHARE,
                                                      "Chance that a league exploiter restarts when frozen."))),
)}  # a new role goes last: the order is the learners' order, so earlier roles keep their module ids and settings
"""Every role, main first; the order is the order of the learners (their module ids, the draw of a game's
learner) and of the settings."""


# ---------------------------------------------------------------- reading the table
def role_named(name: str) -> Role:
    """The role `name`; an unknown name is a ValueError of one line naming the known ones."""
    try:
        return ROLES[name]
    except KeyError:
        raise ValueError(f"unknown league role {name!r}: choose {', '.join(map(str, ROLES))}") from None


def learner_roles() -> list[Role]:
    """The roles besides main, in the table's order: those whose learners a league may add (its exploiters)."""
    return [role for role in ROLES.values() if role.count is not None]


def settings() -> dict[str, Setting]:
    """Every role's settings by key, in the table's order, each once (one several roles read is one setting); a key
    declared twice, differently, is a ValueError."""
    found: dict[str, Setting] = {}
    for role in ROLES.values():
        for setting in role.settings:
            if found.setdefault(setting.key, setting) != setting:
                raise ValueError(f"league role setting {setting.key} is declared twice, differently: declare it once "
                                 "and let each role read it")
    return found


def defaults() -> dict[str, Any]:
    """Every role setting at its default."""
    return {key: setting.default for key, setting in settings().items()}


def seating_defaults() -> dict[str, Any]:
    """What the matchmaker holds of each role besides main, at its defaults: its learners' module ids under its count
    key (none), its share, and the settings its opponents read."""
    found: dict[str, Any] = {}
    for role in learner_roles():
        found[role.count.key] = ()
        found[role.share.key] = role.share.default
        found.update({setting.key: setting.default for setting in role.opponents.settings})
    return found


def learners(values: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each role besides main -> its learners' module ids, for the counts in `values` (role settings by key)."""
    return {role.name: role.learner_ids(values[role.count.key]) for role in learner_roles()}


def seating(values: Mapping[str, Any], module_ids: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """The matchmaker's role keywords (`seating_defaults`) from a league's role settings and its learners' module ids
    by role (`learners`)."""
    found = {key: values[key] for key in seating_defaults()}
    found.update({role.count.key: tuple(module_ids.get(role.name, ())) for role in learner_roles()})
    return found


def role_of(module_id: str) -> str:
    """The role of a learner's module id: ``main``, or ``<role>_<i>`` for a role besides main; anything else is a
    ValueError of one line."""
    if module_id == MAIN:
        return MAIN
    name, _, index = module_id.rpartition("_")
    if name in ROLES and ROLES[name].count is not None and index.isdigit():
        return name
    forms = ", ".join([MAIN, *(f"{role.name}_<i>" for role in learner_roles())])
    raise ValueError(f"{module_id!r} is no learner's module id: {forms}")


def check(values: Mapping[str, Any], prefix: str = "", counts: Mapping[str, int] | None = None) -> None:
    """The one check of the roles' settings (`values`, by key): each within what its `Setting` allows, each role's
    learners given together with a share of the games, and main left some. A ValueError of one line naming
    ``<prefix><key>``; `counts` (role -> learners) stands in for the count keys where they hold module ids (the
    matchmaker's)."""
    known = settings()
    count_keys = {role.count.key for role in learner_roles()}
    for key, value in values.items():
        if key in known and not (counts is not None and key in count_keys):
            known[key].check(value, prefix)
    total = 0.0
    for role in learner_roles():
        count = counts[role.name] if counts is not None else values[role.count.key]
        share, count_key, share_key = values[role.share.key], prefix + role.count.key, prefix + role.share.key
        if count and not share:
            raise ValueError(f"{count_key}={count} with {share_key}={share!r} needs a share of the games to train "
                             f"them: set {share_key}, e.g. 0.2")
        if share and not count:
            raise ValueError(f"{share_key}={share:g} gives games to {role.count.key} and needs {count_key} >= 1: set "
                             f"it, or {share_key}=0")
        total += share
    if total >= 1:
        keys = " + ".join(prefix + role.share.key for role in learner_roles())
        raise ValueError(f"{keys} = {total:g} leaves main no games: the other roles' shares must add up to less than "
                         "1, or they leave main none")


@dataclass(frozen=True)
class ExploiterRules:
    """The table's freeze and reset rules for a run's learners besides main (its exploiters), with the run's role
    settings (`values`, by key)."""

    values: Mapping[str, Any]

    @classmethod
    def of(cls, settings: Any) -> ExploiterRules:
        """For a `policies.league.league.LeagueSettings`."""
        return cls(dict(settings.role_settings))

    def role(self, module_id: str) -> Role:
        role = role_of(module_id)
        if role == MAIN:
            raise ValueError(f"{module_id!r} is no exploiter: main is frozen by the snapshot rule "
                             "(`League.snapshot_due`), and these rules are its exploiters'")
        return ROLES[role]

    def freeze_reason(self, module_id: str, progress: Any) -> str | None:
        """Why exploiter `module_id` is frozen now (`LearnerFreeze.reason`); None while it is not."""
        return self.role(module_id).freeze.reason(self.values, progress)

    def resets(self, module_id: str, draw: float) -> bool:
        """Whether the frozen exploiter restarts; `draw` is uniform in [0, 1)."""
        return self.role(module_id).reset.resets(self.values, draw)

    def start(self, module_id: str) -> str | None:
        """What the exploiter starts a run and restarts from (`STARTS`)."""
        return self.role(module_id).reset.start(self.values)


def takes_role_settings(defaults_of: Callable[[], dict[str, Any]]):
    """Class decorator for a dataclass with a ``role_settings`` field (key -> value): its constructor also takes
    each key of ``defaults_of()`` as a keyword of its own (``main_exploiters=1``), gathered into ``role_settings``
    with the others at their defaults, and an instance reads them back as attributes (``settings.main_exploiters``).
    So the class names no role, and takes a role added to `ROLES` as it takes those there now; an unknown keyword is
    a TypeError, as for any dataclass."""

    def decorate(cls: type) -> type:
        init = cls.__init__

        @functools.wraps(init)
        def __init__(self, *args, role_settings: Mapping[str, Any] | None = None, **kwargs):
            known = defaults_of()
            given = dict(role_settings or {})
            given.update({key: kwargs.pop(key) for key in list(kwargs) if key in known})
            unknown = sorted(set(given) - set(known))
            if unknown:
                raise TypeError(f"{cls.__name__}() got unknown role settings {', '.join(unknown)}: the roles' are "
                                f"{', '.join(known)}")
            init(self, *args, role_settings={**known, **given}, **kwargs)

        def __getattr__(self, name: str) -> Any:
            values = self.__dict__.get("role_settings")
            if values is None or name not in values:
                raise AttributeError(f"{cls.__name__!r} object has no attribute {name!r}")
            return values[name]

        def __hash__(self) -> int:  # the settings' mapping as its items: the class stays hashable as it was
            return hash(tuple(tuple(sorted(value.items())) if f.name == "role_settings" else value
                              for f in dataclasses.fields(self) for value in (getattr(self, f.name),)))

        cls.__init__ = __init__
        cls.__getattr__ = __getattr__
        cls.__hash__ = __hash__
        return cls

    return decorate


def check_table() -> None:
    """The table is whole, or a ValueError of one line: main once, with main's freeze rule; every other role with a
    count, a share and a freeze rule of its own games, and a name its module ids can be read back to; each setting
    declared once. Run on import, and by a test that adds a role."""
    mains = [name for name, role in ROLES.items() if role.count is None]
    if mains != [MAIN] or not hasattr(ROLES[MAIN].freeze, "due"):
        raise ValueError(f"the role table needs one role without a count, main, frozen by a rule with due(); its "
                         f"roles without a count are {mains}")
    for name, role in ROLES.items():
        if name != role.name or not name.isidentifier() or name.rpartition("_")[2].isdigit():
            raise ValueError(f"league role {name!r}: its key must be its name, a Python identifier that does not end "
                             "in _<digits> (its module ids do)")
        if role.count is not None and (role.share is None or not hasattr(role.freeze, "reason")):
            raise ValueError(f"league role {name} needs a share and a freeze rule of its own games (with reason())")
    settings()


check_table()
