"""One league across runs: bring in agents, play rated round robins, print the standings.

    python launch/league.py add outputs/train/<dqn run> outputs/train/<ppo run> [league=<db>] [name=<name>]
    python launch/league.py play games=2000 [league=<db>] [variant=classic] [players=4] [seed=0]
    python launch/league.py show [league=<db>]
    python launch/league.py remove <member> ... [league=<db>]
    python launch/leaderboard.py league=<db>          # the dashboard of the same database

The first word is the sub-command; ``add`` and ``remove`` then take what they
add or remove (anything that is not ``key=value``), and every sub-command takes
Hydra ``key=value`` overrides of its own config, ``conf/league_<sub-command>.yaml``,
typed by `LeagueAddConfig`, `LeaguePlayConfig`, `LeagueShowConfig` and
`LeagueRemoveConfig` (``python launch/league.py <sub-command> --help`` lists
them with their defaults). A key another sub-command takes is refused as any
unknown key. ``bots=random,hybrid`` is the list ``bots=[random,hybrid]``.

``league`` is a league database (`policies.league.store`) or a folder that
holds one as ``league.db`` (a training run's folder works: its snapshots are
already members); default ``outputs/league/league.db``, created on first use.

``add`` takes training run folders (their newest checkpoint's policy), their
checkpoints, policy folders, or the same prefixed with ``ckpt:`` (PPO, DQN,
the GA network, a TD(λ) value), and look-ahead players over them
(``search:<path>?depth=2``, ``mcts:<path>?sims=64``; quote them). Each joins
as an *external* member named after its run and iteration (``name=`` for a
single source), and is evaluated against 3 ``random`` and 3 ``hybrid``
(``panel_games`` games each) for the table. Adding the same policy twice is
a no-op.

``play`` adds every seed bot (``bots=[...]`` to choose) and plays a rated round
among the league's active members: every set of ``players`` members (a round
robin) when ``games`` allows each set a game per seat, else as many
distinct sets as fit, drawn with ``seed``. Seats rotate within each set.
Every game and the new openskill ratings are stored in one transaction,
then the standings are printed. A member whose policy no longer loads (its
files moved or deleted), or was trained for another player count or variant
than the round's, sits the round out, with a warning.

``add`` loads every source before it writes anything and adds them all in
one transaction: a source that does not load leaves the league as it was.

``remove`` takes members by name (as ``show`` prints them) out of the
league: one that never played a rated game is deleted; one that did is
evicted, so its games stay in the others' history. A person (``human:<name>``,
rated from games on the browser site, `launch/serve.py`) is deleted with
every game of theirs and their claim on the name, and every rating round
from their first game on is rated again from the games that are left
(`policies.league.league.remove_person`), so the agents' ratings are what
they would be had the person never played; a game of theirs still being
played on the site is then not rated. A person is found by their name
whatever its case and spaces (``human:Alice`` is ``human:alice``), and a
name claimed on the site that never played a rated game is released. A
training run's main and snapshots are the run's to manage and are refused.

A member whose row holds a rating no round writes (inf, a sigma of 0 or
less, text: a hand edit, another program) is damaged: ``show`` lists it with
no rating, ``play`` leaves it out with one warning while the others play, and
``remove`` takes it out by its name.

A ``py:`` bot is code: ``add`` refuses it, and ``play`` seats no member whose
spec in the database is one (it sits the round out with a warning), since a
database is data and never names code to import. A ``py:`` bot joins a training
run's league from train.py's command line (``league.external``).

The ``human:`` prefix is reserved for people: ``add`` refuses a ``name=``
that starts with it, so no agent can take a person's games.

Errors a user can fix (a path with no policy, an unknown option or bot, too
few members, a policy trained for another player count) print one line, exit
with status 2 and write nothing. Ctrl-C stops within a second or two with one
line and exit status 130; a round not finished records nothing, and an
``add`` stopped before its members' panel games are played takes them out
again.
"""
from __future__ import annotations

import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

import launch  # noqa: E402, F401  (first after the script's sys.path: it refuses a Python other than 3.11)

# isort: split
from hydra.core.config_store import ConfigStore  # noqa: E402  (after the version check above)

from launch.cli import (  # noqa: E402  (after the version check above)
    INT64_MAX,
    MAX_GAMES,
    RAY_DEPRECATIONS,
    UserError,
    catch_interrupts,
    check_integers,
    check_output,
    compose_options,
    emit,
    fail,
    field_names,
    one_line,
    options_help,
    override_key,
    stop_interrupted,
)

DEFAULT_LEAGUE = "outputs/league/league.db"
PANEL_GAMES = 1000
"""Games against each panel opponent for a member that has none yet (``add``'s ``panel_games``)."""


@dataclass
class LeagueShowConfig:
    league: str = DEFAULT_LEAGUE
    """A league database, or a folder holding one as league.db (a training run's folder: its snapshots are members
    already); created on first use, except by show and remove."""


@dataclass
class LeagueRemoveConfig(LeagueShowConfig):
    """``remove <member> ...``: the league alone; what is removed is named before the options."""


@dataclass
class LeagueGamesConfig(LeagueShowConfig):
    variant: str = "classic"
    """The rules the members play under: a file of conf/variant (or a YAML path of rule fields)."""
    players: int = 4
    """Players in each game: 2, 3 or 4; a member trained for another count sits out."""
    seed: int = 0
    """Dice of the panel games and of the round, and which line-ups a round draws."""


@dataclass
class LeagueAddConfig(LeagueGamesConfig):
    name: str | None = None
    """The member's name, for a single source; null: named after its run and iteration. The human: prefix is
    reserved for people."""

    ALLOWED: ClassVar[dict[str, str]] = {"name": "a name outside the prefix reserved for people, or null"}
    panel_games: int = PANEL_GAMES
    """Games against 3 random and against 3 hybrid that give the new member's panel win rates."""


@dataclass
class LeaguePlayConfig(LeagueGamesConfig):
    games: int = 2000
    """Games of the rated round: every set of `players` members a game per seat when it allows, else as many
    distinct sets as fit."""
    bots: list[str] | None = None
    """Seed bots that join the league as members and play; null: every seed bot."""


SUBCOMMANDS: dict[str, type] = {"add": LeagueAddConfig, "play": LeaguePlayConfig, "show": LeagueShowConfig,
                                "remove": LeagueRemoveConfig}
"""Each sub-command and the schema of its options, composed from ``conf/league_<sub-command>.yaml``."""
for _command, _schema in SUBCOMMANDS.items():
    ConfigStore.instance().store(name=f"league_{_command}_schema", node=_schema)
RANGES = {"games": (1, MAX_GAMES), "panel_games": (1, MAX_GAMES), "players": (2, 4), "seed": (0, INT64_MAX)}
OVERRIDE = re.compile(r"[+~]*[A-Za-z_][\w.]*")
"""What the text before ``=`` is in an override; a run folder or a player spec has a ``/`` or a ``:`` there."""
USAGE = ("usage: python launch/league.py {add <run or ckpt:path> ...|play|show|remove <member> ...} "
         "[key=value ...]")


def parse(argv: list[str]):
    """``(sub-command, sources, settings)``: what `add` adds or `remove` removes, and the sub-command's settings,
    composed and checked; every problem a `UserError` of one line, before any database is opened."""
    if not argv or argv[0] not in SUBCOMMANDS:
        raise UserError(f"choose a command: add, play, show or remove ({USAGE})")
    command, schema = argv[0], SUBCOMMANDS[argv[0]]
    sources, overrides = [], []
    for arg in argv[1:]:
        key, eq, _ = arg.partition("=")
        if command == "remove":  # a member's name can hold '=' (search settings): only remove's own keys
            is_override = bool(eq) and override_key(arg) in field_names(schema)
        else:
            is_override = bool(eq) and OVERRIDE.fullmatch(key) is not None
        (overrides if is_override else sources).append(arg)
    if command == "add" and not sources:
        raise UserError("add needs at least one run folder, checkpoint or policy (ckpt:<path>)")
    if command == "remove" and not sources:
        raise UserError("remove needs at least one member name, as show prints it")
    if command not in ("add", "remove") and sources:
        raise UserError(f"{command} takes only key=value options, not {sources[0]!r}")
    cfg = compose_options(f"league_{command}", overrides, schema, command)
    check_integers(cfg, RANGES)
    return command, sources, cfg


def league_settings(cfg, command: str):
    """The `LeagueSettings` the options ask for; every problem a `UserError`, before any database is opened."""
    from policies.league.league import LeagueSettings
    from policies.players import bot_names

    bots = tuple(cfg.bots) if getattr(cfg, "bots", None) is not None else tuple(bot_names())
    unknown = [b for b in bots if b not in bot_names()]
    if unknown:
        raise UserError(f"bots: unknown bot {unknown[0]!r}: choose from {', '.join(bot_names())}")
    rated = bots if command == "play" else ()
    return LeagueSettings(players=cfg.players, max_snapshots=0, bots=(), rated_bots=rated, with_main=False)


def open_league(cfg, command: str, settings=None):
    from policies.league.league import League
    from policies.league.store import LeagueStore

    settings = settings or league_settings(cfg, command)  # checked before the database is opened or made
    store = LeagueStore.open(Path(cfg.league), create=command != "show")
    return League(store, settings, cfg.variant)


def check_enough_members(path: Path, settings) -> None:
    """A round needs `settings.players` distinct members: the league's active ones (main aside) and the seed bots
    `play` adds. Fewer is a `UserError` before the database is made or a bot is added (an error writes nothing)."""
    from policies.league.store import DB_NAME, LeagueStore

    db = path / DB_NAME if path.is_dir() else path
    names = set(settings.rated_bots)
    if db.exists():
        with LeagueStore.open(db, create=False, read_only=True) as store:
            names |= {m.name for m in store.members(active_only=True) if m.kind != "main"}
    if len(names) < settings.players:
        raise UserError(f"a round needs at least {settings.players} members, the league has {len(names)} with the "
                        "bots play adds: add members or choose more bots=")


def warn_dropped(dropped) -> None:
    """One warning line per external member that failed while it played and was dropped (`League.fill_panels`)."""
    for failed in dropped:
        print(f"warning: league member {failed.member} failed against the panel and is dropped from the league: "
              f"{failed.reason}", file=sys.stderr, flush=True)


def rules_of(cfg):
    from ludo_env.rules import Rules

    return Rules.load(cfg.variant, players=cfg.players)


def panel_player(league, rules, games: int, seed: int):
    from policies.league.evaluation import evaluate_panel, panel_record

    def panel(member) -> dict:
        return panel_record(evaluate_panel(league.player(member, guard=True), ("random", "hybrid"), rules, games,
                                           seed))

    return panel


def standings(store) -> str:
    """Members strongest first with their shared rank (`policies.league.leaderboard.ranked`: 1 + the members clearly
    rated above, so members within noise of each other share a rank), mu with its 95% interval, each one's panel
    win rate and its score against the field over every rated game it played
    (`policies.league.ratings.field_scores`: the share of opponents it finished ahead of)."""
    from policies.league.leaderboard import mu_interval, ranked
    from policies.league.ratings import field_scores

    matches = store.matches()
    scores = field_scores((m.seats, m.places) for m in matches)
    order = ranked(store.members(), {member_id: games for member_id, (_, _, games) in scores.items()})
    lines = [(f"{'#':>3}  {'member':<32} {'kind':<9} {'role':<16} {'mu':>6} {'sigma':>6}  {'mu, 95%':<13}  "
              f"{'vs 3 random':<11}  ahead of field (games)")]
    for m, rank in order:
        random_record = (m.panel or {}).get("random")
        vs_random = f"{100 * random_record['win_rate']:.1f}%" if random_record else "-"
        ahead = "-"
        if m.id in scores:
            mean, half_width, games = scores[m.id]
            ahead = f"{100 * mean:.1f}% ± {100 * half_width:.1f} ({games:,})"
        low, high = mu_interval(m)
        status = "  (evicted)" if not m.active else ""
        lines.append(f"{'-' if rank is None else rank:>3}  {m.name:<32} {m.kind:<9} {m.role or '-':<16} "
                     f"{m.mu:6.2f} {m.sigma:6.2f}  {f'{low:.1f} to {high:.1f}':<13}  {vs_random:<11}  {ahead}{status}")
    for d in store.damaged_members():  # listed so that it can be removed; what its row says is no rating
        lines.append(f"{'-':>3}  {d.name:<32} {d.kind:<9} {'-':<16} damaged: {d.problem}, so no rating is shown "
                     "and it plays no game" + ("" if d.active else "  (evicted)"))
    lines.append("# is 1 + the members clearly rated above (their mu, 95% wholly above): members sharing a rank "
                 "are within noise of each other")
    return "\n".join(lines)


def remove_members(store, names: list[str]) -> None:
    """Every name is checked before any is removed; all go in one transaction."""
    from policies.league.league import remove_person
    from policies.league.store import HUMAN_KIND, HUMAN_PREFIX, DamagedMemberError, person_name

    def member_named(name: str):
        """The member, or a damaged one's id, name and kind (its rating is not needed to remove it)."""
        try:
            return store.member(name)
        except DamagedMemberError as err:
            return err.damaged

    members, claims = [], []
    for name in names:
        member = member_named(name)
        if member is None and name.startswith(HUMAN_PREFIX):  # a person, as the site folds names
            name = person_name(name[len(HUMAN_PREFIX):])
            member = member_named(name)
            if member is None and store.claim(name) is not None:
                claims.append(name)  # claimed on the site, never rated: the claim alone goes
                continue
        if member is None:
            known = ", ".join(sorted(store.names())) or "none"
            raise UserError(f"no member named {name!r} in {store.path}: members are {known}")
        if member.kind not in ("external", "bot", HUMAN_KIND):
            raise UserError(f"{name!r} is a training run's {member.kind}: the run manages it, remove refuses")
        members.append(member)
    said = []
    with store.transaction():
        for name in claims:
            store.release_claim(name)
            said.append(f"released: {name}'s claim on the name (it never played a rated game)")
        for member in members:
            if member.kind == HUMAN_KIND:
                games = remove_person(store, member)
                said.append(f"removed: {member.name} and their {games} rated games; every rating from their first "
                            "game on was computed again without them")
                continue
            deleted = store.remove(member.id)
            said.append(f"{'removed' if deleted else 'evicted (it played rated games, which stay)'}: {member.name}")
    emit("\n".join(said))  # once committed: a stdout that fails cannot undo the removal


def check_name(name: str | None) -> None:
    """``name=`` of an agent: the ``human:`` prefix names people only, so a person's games go to no agent."""
    from policies.league.store import HUMAN_PREFIX

    if name is not None and name.startswith(HUMAN_PREFIX):
        raise UserError(f"name={name!r} is not allowed: the {HUMAN_PREFIX!r} prefix is reserved for people rated on "
                        "the site (launch/serve.py); choose another name")


def unloadable(league, members, rules) -> set[int]:
    """Ids of the members whose policy no longer loads (files moved or deleted) or was trained for other rules
    than the round's (another player count or variant): they sit the round out."""
    from policies.checkpoints import PolicyFileError
    from policies.players import PlayerSpecError, check_fits

    absent = set()
    for member in members:
        try:
            check_fits(league.player(member), rules)
        except (PolicyFileError, PlayerSpecError, OSError) as err:
            absent.add(member.id)
            print(f"warning: {member.name} sits this round out: {one_line(err)} "
                  f"(python launch/league.py remove {member.name!r} takes it out)", file=sys.stderr)
    return absent


def main(argv: list[str]) -> None:
    if argv[:1] and argv[0] in SUBCOMMANDS and any(a in ("-h", "--help") for a in argv[1:]):
        emit(options_help(__doc__, f"league_{argv[0]}", SUBCOMMANDS[argv[0]]))
        return
    if any(a in ("-h", "--help") for a in argv[:1]):
        emit(__doc__)
        return
    command, sources, cfg = parse(argv)
    logging.getLogger(RAY_DEPRECATIONS).setLevel(logging.ERROR)  # RLlib's notes about its own code, per ckpt: loaded
    from policies.checkpoints import PolicyFileError
    from policies.league.league import MemberFailed, normalized_external
    from policies.league.store import DB_NAME, LeagueStore, LeagueStoreError
    from policies.players import make_player, names_code

    try:
        # Every option and source is checked before the database is opened or anything is played.
        if command == "show":
            with LeagueStore.open(cfg.league, create=False, read_only=True) as store:
                emit(standings(store))
            return
        name = getattr(cfg, "name", None)
        if name is not None and len(sources) > 1:
            raise UserError("name= names a single source: add one at a time to name each")
        check_name(name)
        league_path = Path(cfg.league)
        check_output(league_path / DB_NAME if league_path.is_dir() else league_path, "league")
        if command == "remove":
            with LeagueStore.open(league_path, create=False) as store:
                remove_members(store, sources)
                emit(standings(store))
            return
        # every source loads, and fits the league's rules, before anything is written: a damaged one, or one
        # trained for another player count, leaves the league as it was; a bad option creates no database
        settings = league_settings(cfg, command)
        rules = rules_of(cfg)
        specs = [normalized_external(source) for source in sources]
        code = next((spec for spec in specs if names_code(spec)), None)
        if code is not None:
            raise UserError(f"{code}: a py: bot is code, and a league database never names code (play would not "
                            "seat it): play it with evaluate.py or play.py, or in a training run's league with "
                            "league.external=[...] on train.py's command line")
        for spec in specs:
            make_player(spec, rules=rules)
        if command == "play":
            check_enough_members(league_path, settings)
        league = open_league(cfg, command, settings)
        players = league.settings.players
        panel = panel_player(league, rules, getattr(cfg, "panel_games", PANEL_GAMES), cfg.seed)
        if command == "add":
            before = {m.id for m in league.store.members()}
            try:
                with league.store.transaction():
                    for spec in specs:
                        known = {m.id for m in league.store.members()}
                        member = league.add_external(spec, name)
                        verb = "already in the league:" if member.id in known else "added"
                        emit(f"{verb} {member.name} ({member.spec})")
                warn_dropped(league.fill_panels(panel))
            except KeyboardInterrupt:  # stopped before its panel: a member added now goes again, as if never added
                with league.store.transaction():
                    for member in league.store.members():
                        if member.id not in before:
                            league.store.remove(member.id)
                raise
        elif command == "play":
            from tqdm import tqdm

            from policies.league.league import round_robin

            members = [m for m in league.store.members(active_only=True) if m.kind != "main"]
            absent = unloadable(league, members, rules)
            warn_dropped(league.fill_panels(lambda member: None if member.id in absent else panel(member)))
            members = [m for m in league.store.members(active_only=True) if m.kind != "main" and m.id not in absent]
            if len(members) < players:
                raise UserError(f"a round needs at least {players} members that play, the league has {len(members)}: "
                                "add members or choose more bots=")
            lineups, per_lineup = round_robin([m.id for m in members], players, cfg.games, cfg.seed)
            print(f"{len(members)} members, {len(lineups)} line-ups x {per_lineup} games", file=sys.stderr)
            with tqdm(total=len(lineups), unit="line-up", desc="round robin") as bar:
                result = league.rating_round(rules, cfg.seed, label="round robin", lineups=lineups,
                                             games_per_lineup=per_lineup, progress=lambda done, total: bar.update())
            print(f"round {result.round_id}: {result.games} rated games", file=sys.stderr)
        emit(standings(league.store))
    except (LeagueStoreError, PolicyFileError, ValueError) as err:
        raise UserError(one_line(err)) from None
    except MemberFailed as err:  # a round stores its games only once all are played
        raise UserError(f"{one_line(err)}; the round recorded nothing: fix the agent or `remove` it") from None


if __name__ == "__main__":
    catch_interrupts()
    try:
        main(sys.argv[1:])
    except UserError as err:
        fail(err)
    except KeyboardInterrupt:
        stop_interrupted("league.py stopped; a round not finished records nothing, and an add not finished adds "
                         "nothing")
