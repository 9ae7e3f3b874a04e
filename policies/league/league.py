"""The league: who is in it, when main is frozen, who gets evicted, whom main meets, and rating rounds.

A `League` is the driver-side owner of a `LeagueStore` (``<run>/league.db``)
during training; `launch/league.py` uses the same rounds across runs.

Members
    ``main`` (the learner, rated as it changes), its frozen snapshots
    (``main@<iteration>``, weights in ``<db folder>/league/<name>/`` as a
    `policies.checkpoints` policy), the seed bots (fixed, always active) and
    external agents (``ckpt:`` policies from other runs, search players,
    ``py:`` bots). An external agent that raises while it plays (a ``py:``
    bot's bug, an illegal answer, files gone) fails alone: training drops it
    (`drop`: inactive for good, the reason in the database's meta, so a
    resumed run keeps it out) and goes on without it.

Snapshot rule (`LeagueSettings`; main's entry in `policies.league.roles.ROLES`)
    Freeze main every ``snapshot_every`` iterations, or earlier when main's
    mean chance to finish ahead of the league's other members in the last
    rating round reaches ``snapshot_win_rate`` (None: off). At most
    ``max_snapshots`` snapshots are active, one per RLlib module slot; a new
    snapshot beyond that evicts one by its role's eviction rule: the active
    snapshot of its own role with the lowest mu, which keeps its records, else
    main's lowest (`policies.league.roles.OwnRoleFirst`). So each exploiter
    role keeps its newest frozen member or better, and main's snapshots keep
    the other slots.

Roles (``league=alphastar``; `policies.league.roles`)
    Besides main, learners of other roles (AlphaStar's exploiters) learn in the
    same run, each an RLlib module of its own trained on its own share of the
    games. The role table says, for each role, whom its learners play, their
    share of the games, when one is frozen into the league and whether and
    from what it then restarts; the league reads their settings
    (``main_exploiters``, ``main_exploiter_share``, ...) from `LeagueSettings`.
    A frozen exploiter is a snapshot with its role (``main_exploiter_0@<iteration>``):
    it takes a snapshot slot like main's snapshots (evicting by role), starts
    from main's rating as they do (openskill's start would have it evicted
    before it was ever rated), and is drawn at main's seats like any snapshot.
    The league's PFSP chances are main's: a league exploiter meets the members
    main finds hard (it has no record of its own until frozen).

Matchmaking (`matchmaker`, a `policies.league.pool.Matchmaker`)
    One seat is always main. Every other seat is main (``main_weight``: pure
    self-play), a seed bot of ``bots`` (``bot_weight``) or an active
    snapshot (``snapshot_weight``). Within snapshots and within bots, an
    opponent is drawn with weight ``f(x)`` (prioritized fictitious self-play,
    `policies.league.ratings.PFSP_WEIGHTINGS`, named by ``pfsp``), where x is
    main's chance to finish ahead of it over the last ``pfsp_rounds`` rounds:
    opponents that beat main more often are drawn more often.

Rating rounds (`rating_round`)
    ``lineups`` line-ups of distinct members, half of them with main, the rest
    drawn from all active members, each playing ``games_per_lineup`` games in
    the fast evaluator (`policies.tournament.play_tournament`: seats rotate,
    dice from the round's seed) with every member greedy. Each finished game
    is stored with its full finishing order, and openskill's Plackett-Luce
    model updates every member's rating game by game, with no per-game drift
    (frozen members do not change) but main's sigma widened first, since main
    trained since its last round (`policies.league.ratings.LEAGUE_TAU`,
    ``MAIN_DRIFT``); the ratings after the round go to the rating history.
    Everything a round writes commits in one transaction.
"""
from __future__ import annotations

import itertools
import json
import random
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.champions import CHAMPION_PREFIX, ChampionError, champion_folder
from policies.league import roles
from policies.league.pool import MAIN, Matchmaker, bot_module_id, snapshot_id
from policies.league.ratings import (
    LEAGUE_TAU,
    MAIN_DRIFT,
    ahead_rate,
    clearly_ahead,
    head_to_head,
    pfsp_weight,
    rate_games,
    start_rating,
)
from policies.league.roles import role_of
from policies.league.store import HUMAN_KIND, DamagedMemberError, LeagueStore, Member

MAIN_MEMBER = "main"
SNAPSHOT_DIR = "league"
DROPPED_META = "dropped:"
"""``meta`` key prefix of a dropped external member's record (`League.drop`): ``dropped:<name>``."""


class MemberFailed(RuntimeError):
    """A league member's player raised while it played; one line naming the member and what it raised."""

    def __init__(self, member: str, reason: str):
        super().__init__(f"league member {member} failed: {reason}")
        self.member, self.reason = member, reason


class _Guarded:
    """An external member's player whose failures name the member (`MemberFailed`), so a round or a panel
    knows whom to drop; every other attribute (``thread_safe``, ``trained_for``) is the player's."""

    def __init__(self, player: Any, member: str):
        self._player = player
        self.name = member

    def act(self, states, tab, masks):
        try:
            return self._player.act(states, tab, masks)
        except Exception as err:  # the agent's own code (a py: bot) or a broken saved agent
            raise MemberFailed(self.name, failure_line(err)) from err

    def __getattr__(self, name: str) -> Any:
        if name == "_player":  # not set yet (a copy being built): no endless lookup
            raise AttributeError(name)
        return getattr(self._player, name)


def failure_line(err: BaseException) -> str:
    """What an agent raised, in one line: a `policies.players.PlayerError` already names the agent's code."""
    from policies.players import PlayerError

    text = " ".join(str(err).split())
    if isinstance(err, PlayerError) and text:
        return text
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def member_policy_folder(member: Member, db_folder: Path) -> Path | None:
    """Where a learned member's weights are: its ``ckpt:`` spec, relative to `db_folder` (the database's folder)
    unless absolute; None for a member that is no saved policy (a bot, ``search:``, main)."""
    if not member.spec.startswith("ckpt:"):
        return None
    path = Path(member.spec[len("ckpt:"):])
    return path if path.is_absolute() else db_folder / path


@roles.takes_role_settings(roles.defaults)
@dataclass(frozen=True)
class LeagueSettings:
    """How a league behaves; `launch.training.schema.LeagueConfig` (conf/league) is an editable copy of these fields
    and of the roles' settings."""

    players: int
    """Seats per game (2-4): the size of every line-up."""
    snapshot_every: int = 10
    """Training iterations between snapshots of main joining the league."""
    snapshot_win_rate: float | None = None
    """Also freeze main when, in a rating round, it finishes ahead of the others this often (None: off)."""
    max_snapshots: int = 8
    """Active snapshots (one RLlib module slot each); beyond it the lowest-rated snapshot is evicted."""
    bots: tuple[str, ...] = ("random", "hybrid")
    """Seed bots main trains against, as fixed modules (policies.bots names)."""
    rated_bots: tuple[str, ...] = ()
    """Further seed bots that are league members in the rating rounds (conf/league: every seed bot)."""
    external: tuple[str, ...] = ()
    """Agents from other runs in the rating rounds: run, checkpoint or policy folders (ckpt:<path>)."""
    main_weight: float = 0.5
    """Share of opponent seats that are main itself (pure self-play)."""
    snapshot_weight: float = 0.3
    """Share of opponent seats that are snapshots (goes to main until one exists)."""
    bot_weight: float = 0.2
    """Share of opponent seats that are bots."""
    external_weight: float = 0.2
    """Share of opponent seats that are external members (the batched sampler only; left out when there are
    none, so the other shares keep their proportions)."""
    pfsp: str = "squared"
    """Prioritized fictitious self-play weighting f(x), x = main's chance to finish ahead: squared, linear,
    variance or uniform."""
    pfsp_rounds: int = 3
    """Rating rounds whose games set the PFSP chances."""
    lineups: int = 8
    """Line-ups of distinct members per rating round (one every eval.every iterations); half include main."""
    games_per_lineup: int = 40
    """Games per line-up (seats rotate: a multiple of the player count seats everyone equally)."""
    with_main: bool = True
    """A training league has the learner as member ``main``; a cross-run league does not."""
    role_settings: Mapping[str, Any] = field(default_factory=dict)
    """The settings of the league's roles (`policies.league.roles.settings`: ``main_exploiters``,
    ``main_exploiter_share``, ...), by key. Given as keywords of their own (``LeagueSettings(players=4,
    main_exploiters=1)``) and read back as attributes, like the fields above; those not given are at their
    defaults."""

    def __post_init__(self):
        roles.check(self.role_settings)


@dataclass
class ExploiterProgress:
    """One exploiter (a learner of a role besides main) since its last reset, kept in the run state across a
    resume: its own decisions, its finished training games and, over its opponents' seats in them, how many it
    finished ahead of; and how often it was frozen and reset over the run. Its role's freeze rule reads it
    (`policies.league.roles.ExploiterRules`)."""

    decisions: int = 0
    games: int = 0
    ahead: int = 0
    met: int = 0
    frozen: int = 0
    resets: int = 0

    @property
    def ahead_rate(self) -> float | None:
        return self.ahead / self.met if self.met else None

    def add(self, decisions: int, games: int, ahead: int, met: int) -> None:
        self.decisions += decisions
        self.games += games
        self.ahead += ahead
        self.met += met

    def restart(self, reset: bool) -> None:
        """Frozen: its count starts again (from its initial weights when `reset`)."""
        self.decisions = self.games = self.ahead = self.met = 0
        self.frozen += 1
        self.resets += int(reset)


@dataclass
class RoundResult:
    round_id: int
    iteration: int | None
    games: int
    ratings: dict[str, tuple[float, float]]
    main_ahead: dict[str, float] = field(default_factory=dict)
    """Main's chance to finish ahead of each member it met this round."""
    dropped: list[MemberFailed] = field(default_factory=list)
    """External members dropped because they failed while playing this round (`League.rating_round`)."""

    @property
    def main_vs_league(self) -> float | None:
        return sum(self.main_ahead.values()) / len(self.main_ahead) if self.main_ahead else None


class League:
    def __init__(self, store: LeagueStore, settings: LeagueSettings, variant: str):
        self.store = store
        self.settings = settings
        self.variant = variant
        self._players: dict[str, Any] = {}
        self._given: set[str] = set()
        """Specs this process was given (`add_external`), not read from the database: the only ``py:`` specs
        played (`spec_of`)."""
        self._last_round: RoundResult | None = None
        pfsp_weight(settings.pfsp)  # an unknown weighting fails here, at start-up
        with store.transaction():
            if settings.with_main:
                store.ensure_member(MAIN_MEMBER, "main", "main")
            for bot in dict.fromkeys((*settings.rated_bots, *settings.bots)):
                try:
                    store.ensure_member(bot, "bot", bot)
                except DamagedMemberError:  # there, but damaged: it sits out, as reading the members warns
                    pass
            for spec in settings.external:
                self.add_external(spec)

    # ------------------------------------------------------------------ members
    @property
    def folder(self) -> Path:
        return self.store.path.parent

    def add_external(self, spec: str, name: str | None = None) -> Member:
        """An agent from elsewhere, by a name derived from its path: a run, checkpoint or policy folder (with or
        without ``ckpt:``), or a look-ahead player over one (``search:<path>?...``, ``mcts:<path>?...``)."""
        spec = normalized_external(spec)
        self._given.add(spec)
        for member in self.store.members(kinds=["external"]):
            if member.spec == spec:
                return member
        name = name or external_spec_name(spec)
        taken = self.store.names()
        base, k = name, 2
        while name in taken:
            name, k = f"{base}#{k}", k + 1
        return self.store.add_member(name, "external", spec)

    def fill_panels(self, panel_of, iteration: int | None = None) -> list[MemberFailed]:
        """Give every active bot and external member without one its panel record, ``panel_of(member)``. An
        external member whose player (``player(member, guard=True)``) fails while it plays is dropped (`drop`);
        returns those failures."""
        dropped = []
        for member in self.store.members(active_only=True, kinds=["bot", "external"]):
            if member.panel is None:
                try:
                    self.store.update_member(member.id, panel=panel_of(member))
                except MemberFailed as failed:
                    if failed.member != member.name:
                        raise
                    self.drop(failed.member, failed.reason, iteration)
                    dropped.append(failed)
        return dropped

    def drop(self, name: str, reason: str, iteration: int | None = None) -> Member:
        """Take external member `name` out of the league for good: it is no longer drawn, seated or rated (a
        resumed run keeps it out: `add_external` finds it and leaves it inactive), and ``dropped:<name>`` in
        the database's meta says why and when. Its row, matches and ratings stay."""
        member = self.store.member(name)
        if member is None or member.kind != "external":
            raise ValueError(f"only an external member can be dropped, not {name!r}")
        with self.store.transaction():
            self.store.update_member(member.id, active=0, evicted_at=time.time(), slot=None)
            self.store.set_meta(f"{DROPPED_META}{name}", json.dumps({"reason": reason, "iteration": iteration}))
        self._players.pop(name, None)
        return self.store.member(name)

    def dropped(self) -> dict[str, dict[str, Any]]:
        """The dropped external members: name -> ``{"reason", "iteration"}``."""
        out = {}
        for member in self.store.members(kinds=["external"]):
            record = self.store.get_meta(f"{DROPPED_META}{member.name}")
            if record is not None and not member.active:
                out[member.name] = json.loads(record)
        return out

    def set_main_panel(self, panel: Mapping[str, Any], iteration: int, env_steps: int) -> None:
        main = self.store.member(MAIN_MEMBER)
        self.store.update_member(main.id, panel=dict(panel), iteration=iteration, env_steps=env_steps)

    def main_standing(self) -> tuple[int, int, Member]:
        """Main's shared rank among the active members that played a rated game (`leaderboard.ranked`: 1 + those
        clearly rated above it), how many are ranked, and main."""
        from policies.league.leaderboard import games_played, ranked

        order = ranked(self.store.members(active_only=True), games_played(self.store.matches()))
        rank = next(r for m, r in order if m.name == MAIN_MEMBER)
        return rank, sum(r is not None for _, r in order), self.store.member(MAIN_MEMBER)

    def within_noise(self, member: Member) -> list[Member]:
        """The other active members that played and are not clearly rated apart from `member`, best first."""
        from policies.league.leaderboard import games_played, ranked

        rating = (member.mu, member.sigma)
        order = ranked(self.store.members(active_only=True), games_played(self.store.matches()))
        return [m for m, r in order if r is not None and m.id != member.id
                and not clearly_ahead(rating, (m.mu, m.sigma)) and not clearly_ahead((m.mu, m.sigma), rating)]

    def active_snapshots(self) -> list[Member]:
        return self.store.members(active_only=True, kinds=["snapshot"])

    def slot_members(self) -> dict[int, Member]:
        """The active snapshot in each filled RLlib slot."""
        return {m.slot: m for m in self.active_snapshots() if m.slot is not None}

    def snapshot_due(self, iteration: int, last_snapshot_iteration: int | None,
                     last_round: RoundResult | None = None) -> bool:
        """Whether main is frozen now, by main's freeze rule in the role table (module docstring, Snapshot rule;
        `policies.league.roles.Periodic`). The win-rate rule reads this league's own round of this iteration;
        given `last_round`, a round played beside training whose result is taken up iterations later
        (`launch.training.trainers.league_upkeep`), only the win-rate rule is asked, about that round, once, when
        it arrives."""
        return roles.role_named(MAIN).freeze.due(self.settings, iteration, last_snapshot_iteration, last_round,
                                                 self._last_round)

    def add_snapshot(self, iteration: int, env_steps: int, write_weights,
                     panel: Mapping[str, Any] | None = None, learner: str = MAIN) -> tuple[Member, Member | None]:
        """Freeze `learner` (main or an exploiter's module id): `write_weights(folder)` writes its policy; returns
        the new member (a snapshot with the learner's role) and the one its role's eviction rule evicted, when
        every slot was taken."""
        role = role_of(learner)
        name = self._free_name(f"{learner}@{iteration}")
        folder = Path(SNAPSHOT_DIR) / safe_folder_name(name)
        write_weights(self.folder / folder)  # files first: a committed member always has its weights
        taken = self.slot_members()
        evicted = None
        free = [s for s in range(self.settings.max_snapshots) if s not in taken]
        main = self.store.member(MAIN_MEMBER)
        with self.store.transaction():
            if free:
                slot = free[0]
            else:
                evicted = roles.role_named(role).eviction.evicts(role, taken.values())
                slot = evicted.slot
                self.store.evict(evicted.id)
            # A snapshot of main is main at this moment: it starts from main's rating. So does a frozen exploiter,
            # which trained against main or main's league: openskill's start (ordinal 0) would make it the
            # lowest-rated snapshot, evicted by the next one before any round had rated it.
            member = self.store.add_member(name, "snapshot", f"ckpt:{folder.as_posix()}", iteration=iteration,
                                           env_steps=env_steps, mu=main.mu, sigma=main.sigma,
                                           panel=dict(panel) if panel else None, slot=slot, role=role)
        return member, evicted

    def _free_name(self, name: str) -> str:
        # A resumed run can reach the same iteration again: keep both snapshots.
        taken = self.store.names()
        base, k = name, 2
        while name in taken:
            name, k = f"{base}.{k}", k + 1
        return name

    def policy_folder(self, member: Member) -> Path | None:
        """Where a learned member's weights are (`member_policy_folder`)."""
        return member_policy_folder(member, self.folder)

    # ------------------------------------------------------------------ matchmaking
    def matchmaker(self, seed: int, rounds_back: int | None = None, with_externals: bool = True) -> Matchmaker:
        """Seats for training games, PFSP within snapshots, bots and (`with_externals`) external members, and
        the learners of every role besides main with their shares (`policies.league.roles`)."""
        settings = self.settings
        slots = self.slot_members()
        main = self.store.member(MAIN_MEMBER)
        records = self._recent_records(settings.pfsp_rounds if rounds_back is None else rounds_back)
        weigh = pfsp_weight(settings.pfsp)

        def priority(member: Member) -> float:
            return weigh(ahead_rate(records.get((main.id, member.id))))

        ordered = sorted(slots.items(), key=lambda item: (item[1].iteration or 0, item[1].id))
        bots = [self.store.member(b) for b in settings.bots]
        externals = self.store.members(active_only=True, kinds=["external"]) if with_externals else []
        return Matchmaker(
            settings.players,
            snapshots=tuple(snapshot_id(slot) for slot, _ in ordered),
            bots=tuple(bot_module_id(b.name) for b in bots),
            main_weight=settings.main_weight, snapshot_weight=settings.snapshot_weight,
            bot_weight=settings.bot_weight, seed=seed,
            snapshot_priorities=tuple(priority(m) for _, m in ordered),
            bot_priorities=tuple(priority(b) for b in bots),
            externals=tuple(m.name for m in externals), external_weight=settings.external_weight,
            external_priorities=tuple(priority(m) for m in externals),
            main_snapshots=tuple(snapshot_id(slot) for slot, m in ordered if m.role == MAIN),
            **roles.seating(settings.role_settings, roles.learners(settings.role_settings)),
        )

    def _recent_records(self, rounds_back: int) -> dict[tuple[int, int], tuple[int, int]]:
        rounds = self.store.rounds()
        if not rounds:
            return {}
        first = rounds[max(0, len(rounds) - rounds_back)]["id"]
        return head_to_head((m.seats, m.places) for m in self.store.matches(since_round=first))

    # ------------------------------------------------------------------ rating rounds
    def player(self, member: Member, main_player=None, guard: bool = False):
        """The member as a `policies.players.Player` named after it (learned members are cached). With `guard`,
        an external member's player raises `MemberFailed`, naming it, whatever it raises while it plays."""
        from policies.players import make_player

        if guard and member.kind == "external":
            try:
                return _Guarded(self.player(member), member.name)
            except Exception as err:  # its files gone or damaged since it joined: it fails like one that raises
                raise MemberFailed(member.name, failure_line(err)) from err

        if member.kind == "main":
            if main_player is None:
                raise ValueError("a round with main needs main's current player")
            return main_player
        if member.kind == "bot":
            return make_player(self.spec_of(member))
        if member.name not in self._players:
            if member.kind == "external":  # any saved agent or search over one: whatever the spec names
                player = make_player(self.spec_of(member))
                player.name = member.name
            else:
                from policies.saved import load_player

                player = load_player(self.policy_folder(member), member.name)
            self._players[member.name] = player
        return self._players[member.name]

    def spec_of(self, member: Member) -> str:
        """The spec that plays a bot or external member: its spec in the database, which is data. A ``py:`` spec
        is code, played only when this process was given it (league.external of a training run, the sources of
        ``league.py add``), never because the database names it: `PlayerSpecError` of one line otherwise."""
        from policies.players import stored_spec

        return stored_spec(member.spec, f"league member {member.name}", self._given)

    def rating_round(self, rules, seed: int, *, main_player=None, iteration: int | None = None,
                     env_steps: int | None = None, label: str = "training",
                     lineups: Sequence[tuple[int, ...]] | None = None, games_per_lineup: int | None = None,
                     progress=None, drop_failing: bool = False, members: Sequence[int] | None = None,
                     record_with=None) -> RoundResult:
        """Play, record and rate one round (module docstring); main takes part when `main_player` is given.

        `lineups` (member ids) replaces the settings' random line-ups, e.g. with a
        round robin (`round_robin`); `progress(done, total)` is told after each one.
        With `drop_failing` (and the settings' line-ups), an external member that fails while it plays is
        dropped (`drop`) and the round is played again without it: nothing of the failed attempt is stored.
        A league left with fewer active members than seats raises `MemberFailed`.
        `members` (ids) limits the round to those of them still active: the members as they were when a round
        played beside training was asked for, not those that joined since. ``record_with(ratings)`` (member id
        -> (mu, sigma) after the round) writes more into the round's own transaction, so that it is recorded
        with the round or not at all.
        """
        dropped: list[MemberFailed] = []
        while True:
            try:
                result = self._rating_round(rules, seed, main_player, iteration, env_steps, label, lineups,
                                            games_per_lineup, progress, members, record_with)
            except MemberFailed as failed:
                if not drop_failing or lineups is not None:
                    raise
                self.drop(failed.member, failed.reason, iteration)
                dropped.append(failed)
                active = len(self.store.members(active_only=True))
                if active < self.settings.players:
                    raise MemberFailed(failed.member, f"{failed.reason}; dropped, it leaves {active} active "
                                                      f"members for the {self.settings.players} seats of a "
                                                      "rating round: add league.rated_bots") from None
                continue
            result.dropped = dropped
            return result

    def _rating_round(self, rules, seed, main_player, iteration, env_steps, label, lineups, games_per_lineup,
                      progress, only=None, record_with=None) -> RoundResult:
        only = None if only is None else set(only)
        members = [m for m in self.store.members(active_only=True)
                   if (m.kind != "main" or main_player is not None) and (only is None or m.id in only)]
        by_id = {m.id: m for m in members}
        main = self.store.member(MAIN_MEMBER) if main_player is not None else None
        if lineups is None:
            lineups = schedule([m.id for m in members], self.settings.players, self.settings.lineups, seed,
                               focus=main.id if main else None)
        games = []
        for k, lineup in enumerate(lineups):
            players = [self.player(by_id[i], main_player, guard=True) for i in lineup]
            games.extend(play_lineup(players, lineup, rules, games_per_lineup or self.settings.games_per_lineup,
                                     seed + k))
            if progress is not None:
                progress(k + 1, len(lineups))
        ratings = rate_round(games, {m.id: (m.mu, m.sigma) for m in members}, label,
                             main.id if main is not None else None)
        with self.store.transaction():
            round_id = self.store.add_round(label, self.variant, iteration, env_steps)
            self.store.add_matches(round_id, self.variant, games)
            self.store.set_ratings(round_id, ratings, iteration)
            if record_with is not None:
                record_with(ratings)
        result = RoundResult(round_id, iteration, len(games), {by_id[i].name: r for i, r in ratings.items()})
        if main is not None:
            records = head_to_head(games)
            result.main_ahead = {by_id[b].name: ahead_rate(rec, prior_games=0.0)
                                 for (a, b), rec in records.items() if a == main.id and rec[1]}
        self._last_round = result
        return result


def schedule(member_ids: Sequence[int], players: int, lineups: int, seed: int,
             focus: int | None = None) -> list[tuple[int, ...]]:
    """`lineups` line-ups of `players` distinct members: with `focus`, every other one includes it."""
    if len(member_ids) < players:
        raise ValueError(f"a rating round needs at least {players} members, the league has {len(member_ids)}")
    rng = random.Random(seed)
    out = []
    for k in range(lineups):
        if focus is not None and k % 2 == 0:
            others = rng.sample([m for m in member_ids if m != focus], players - 1)
            out.append((focus, *others))
        else:
            out.append(tuple(rng.sample(list(member_ids), players)))
    return out


def round_robin(member_ids: Sequence[int], players: int, games: int, seed: int) -> tuple[list[tuple[int, ...]], int]:
    """Line-ups for about `games` games: every set of `players` members when there are games enough for each
    to play once per seat, else as many distinct sets as fit, drawn at random. Returns them and the games
    per line-up (a multiple of `players`, so seats rotate evenly)."""
    if len(member_ids) < players:
        raise ValueError(f"a round needs at least {players} members, the league has {len(member_ids)}")
    every = list(itertools.combinations(member_ids, players))
    if len(every) * players <= games:
        return every, max(players, games // len(every) // players * players)
    return random.Random(seed).sample(every, max(1, games // players)), players


def play_lineup(players: Sequence[Any], member_ids: Sequence[int], rules, games: int,
                seed: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Finished games of one line-up as (member id per seat, place per seat); seats rotate."""
    from policies.tournament import play_tournament

    names = [p.name for p in players]
    if len(set(names)) != len(names):
        raise ValueError(f"a line-up needs players with distinct names, got {names}")
    result = play_tournament(list(players), games, rules, seed, rate=False)
    out = []
    for g in range(result.games):
        if not result.finished[g]:
            continue
        entries = result.seats[g]  # entry at each seat
        out.append((tuple(int(member_ids[e]) for e in entries),
                    tuple(int(result.places[g, e]) for e in entries)))
    return out


LOOKAHEAD_PREFIXES = ("search:", "mcts:")
EXTERNAL_SPECS = ("give a run, checkpoint or policy folder (ckpt:<path>), search:<path>?depth=2, "
                  "mcts:<path>?sims=64, champion:<variant> or py:package.module:ClassName")
"""What an external member may be, for error lines."""


def normalized_external(spec: str) -> str:
    """`spec` with its policy path made absolute (``ckpt:`` added to a bare path); checks the policy is there.
    A ``py:`` bot stays as it is, and so does a ``champion:`` (the member is the rule set's champion, whatever
    policy folder `policies.champions` names for it), once it is known to be there."""
    from policies.checkpoints import find_policy
    from policies.players import PlayerSpecError
    from policies.rollout import ROLLOUT_PREFIX

    if not isinstance(spec, str) or not spec.strip():  # else find_policy('') looks in the current folder
        raise PlayerSpecError(f"an empty spec {spec!r} names no agent: {EXTERNAL_SPECS}")
    if spec.startswith("py:"):
        return spec
    if spec.startswith(ROLLOUT_PREFIX):
        raise PlayerSpecError(f"player '{spec}': a rollout: player cannot join a league: it plays games out at each "
                              f"of its moves, and a league round would wait on them; {EXTERNAL_SPECS}")
    if spec.startswith(CHAMPION_PREFIX):
        try:
            find_policy(champion_folder(spec))
        except ChampionError as err:
            raise PlayerSpecError(f"player '{spec}': {err}") from None
        return spec.strip()
    for prefix in LOOKAHEAD_PREFIXES:
        if spec.startswith(prefix):
            path, sep, query = spec[len(prefix):].partition("?")
            find_policy(path)
            return f"{prefix}{Path(path).resolve()}{sep}{query}"
    return f"ckpt:{find_policy(spec.removeprefix('ckpt:')).resolve()}"


def external_spec_name(spec: str) -> str:
    """``run@iter`` for a policy; a search adds its settings: ``run@iter:search-depth=2``; a ``py:`` bot its spec."""
    from policies.checkpoints import find_policy

    if spec.startswith(("py:", CHAMPION_PREFIX)):
        return spec
    for prefix in LOOKAHEAD_PREFIXES:
        if spec.startswith(prefix):
            path, _, query = spec[len(prefix):].partition("?")
            settings = "-".join(query.split("&")) if query else ""
            return f"{external_name(find_policy(path).resolve())}:{prefix[:-1]}{'-' + settings if settings else ''}"
    return external_name(Path(spec.removeprefix("ckpt:")))


def external_name(policy: Path) -> str:
    """A readable name for a policy folder: its run folder's name (and checkpoint when not the newest)."""
    parts = policy.parts
    if "checkpoints" in parts:
        i = parts.index("checkpoints")
        if 0 < i and i + 1 < len(parts):
            checkpoint = parts[i + 1]
            return f"{parts[i - 1]}@{checkpoint.rpartition('_')[2].lstrip('0') or '0'}"
    return policy.parent.name if policy.name == "policy" else policy.name


def safe_folder_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", name)


# ---------------------------------------------------------------- how a round is rated, and rated again
HUMAN_ROUND = "human"
"""The label of a round that rates one game a person played on the browser site (`launch.web.games`)."""


def rate_round(games, ratings: Mapping[int, tuple[float, float]], label: str,
               main_id: int | None = None) -> dict[int, tuple[float, float]]:
    """The ratings of every member in `ratings` after a round of `games`: the one rule for a round, used when it is
    played and when the league is rated again (`remove_person`). A league round rates with `LEAGUE_TAU` and widens
    main's sigma first (`main_id`, when main played); a person's game (`HUMAN_ROUND`) with openskill's own tau, as a
    person changes as they play."""
    if label == HUMAN_ROUND:
        return rate_games(games, ratings)
    return rate_games(games, ratings, tau=LEAGUE_TAU, changed={main_id: MAIN_DRIFT} if main_id is not None else None)


def remove_person(store: LeagueStore, member: Member) -> int:
    """Take person `member` (kind human) out of the league with every game of theirs, their claim on the site and
    its rated-game records, and rate every round from their first game on again, in order, from the games that are
    left: the agents' ratings become what they would have been had the person never played. One transaction;
    returns how many of their games were removed.

    A member's rating before the first of those rounds is its last in the rating history, or, when it had none
    yet, what it joined with: openskill's start, and for a snapshot main's rating when it was frozen (as
    `League.add_snapshot` gives it)."""
    if member.kind != HUMAN_KIND:
        raise ValueError(f"{member.name!r} is no person (kind {member.kind})")
    db = store.db
    with store.transaction():
        theirs = [m for m in store.matches() if member.id in m.seats]
        dropped = {m.id for m in theirs}
        if theirs:
            _rate_again(store, min(m.round_id for m in theirs), dropped, member.id)
        for match_id in dropped:
            db.execute("DELETE FROM matches WHERE id = ?", (match_id,))
        emptied = [r["id"] for r in store.rounds()
                   if not db.execute("SELECT 1 FROM matches WHERE round_id = ? LIMIT 1", (r["id"],)).fetchone()
                   and r["id"] in {m.round_id for m in theirs}]
        for round_id in emptied:  # a person's game is a round of its own: it goes with its ratings rows
            db.execute("DELETE FROM ratings WHERE round_id = ?", (round_id,))
            db.execute("DELETE FROM site_games WHERE round_id = ?", (round_id,))
            db.execute("DELETE FROM rounds WHERE id = ?", (round_id,))
        db.execute("DELETE FROM ratings WHERE member_id = ?", (member.id,))
        db.execute("DELETE FROM site_games WHERE person = ?", (member.name,))
        db.execute("DELETE FROM people WHERE name = ?", (member.name,))
        db.execute("DELETE FROM members WHERE id = ?", (member.id,))
    return len(theirs)


def _rate_again(store: LeagueStore, first_round: int, dropped: set[int], person: int) -> None:
    """Rate rounds `first_round` and later again without the matches `dropped` and member `person`; the rating
    history rows of those rounds and the members' ratings are rewritten (`remove_person`)."""
    db = store.db
    members = {m.id: m for m in store.members()}
    rows = [dict(r) for r in db.execute("SELECT id, member_id, round_id, mu, sigma FROM ratings ORDER BY id")]
    later = [r for r in rows if r["round_id"] is not None and r["round_id"] >= first_round]
    cut = min((r["id"] for r in later), default=None)
    if cut is None:
        return
    current: dict[int, tuple[float, float]] = {}
    for row in rows:
        if row["id"] < cut:
            current[row["member_id"]] = (row["mu"], row["sigma"])
    main = next((m for m in members.values() if m.kind == "main"), None)
    # main's rating over time, for a snapshot that joins later: (when, rating), the history before the cut first
    main_over_time = [(0.0, start_rating())] + [
        (r["created_at"], (r["mu"], r["sigma"])) for r in db.execute(
            "SELECT created_at, mu, sigma FROM ratings WHERE member_id = ? AND id < ? ORDER BY id",
            (main.id if main else -1, cut))]

    def joined_with(member_id: int) -> tuple[float, float]:
        member = members[member_id]
        if member.kind == "snapshot":
            return next(rating for when, rating in reversed(main_over_time) if when <= member.created_at)
        return start_rating()

    rounds = [r for r in store.rounds() if r["id"] >= first_round]
    damaged = {d.id: d for d in store.damaged_members() if d.id != person}
    skipped: dict[int, int] = {}
    by_round: dict[int, list] = {}
    for match in store.matches(since_round=first_round):
        if match.id in dropped:
            continue
        bad = [damaged[i] for i in dict.fromkeys(match.seats) if i in damaged]
        if bad:  # a damaged member has no rating to rate its games from: they stay as they are, unrated again
            for member in bad:
                skipped[member.id] = skipped.get(member.id, 0) + 1
            continue
        by_round.setdefault(match.round_id, []).append((match.seats, match.places))
    for member_id, games in skipped.items():
        print(f"warning: {store.path}: league member {damaged[member_id].name!r} has {damaged[member_id].problem}: "
              f"its {games} rated games are left out of the ratings computed again", file=sys.stderr, flush=True)
    for round_ in rounds:
        players = [r["member_id"] for r in later if r["round_id"] == round_["id"] and r["member_id"] != person
                   and r["member_id"] in members]
        games = by_round.get(round_["id"], [])
        if not players or not games:
            continue  # the person's own game: it goes whole
        before = {p: current[p] if p in current else joined_with(p) for p in players}
        main_id = main.id if main is not None and main.id in before and round_["label"] != HUMAN_ROUND else None
        after = rate_round(games, before, round_["label"], main_id)
        for member_id in players:
            current[member_id] = after[member_id]
            db.execute("UPDATE ratings SET mu = ?, sigma = ? WHERE round_id = ? AND member_id = ?",
                       (*after[member_id], round_["id"], member_id))
        if main_id is not None:
            main_over_time.append((round_["created_at"], after[main_id]))
    # every member rated from the first of those rounds on, one that played only the person's games included
    for member_id in {r["member_id"] for r in later if r["member_id"] != person and r["member_id"] in members}:
        rating = current[member_id] if member_id in current else joined_with(member_id)
        db.execute("UPDATE members SET mu = ?, sigma = ? WHERE id = ?", (*rating, member_id))
