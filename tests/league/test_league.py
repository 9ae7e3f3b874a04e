"""League logic without Ray: members, the snapshot rule and eviction, PFSP matchmaking, rating rounds, round robins."""
from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from ludo_env.rules import Rules
from policies.checkpoints import PolicyFileError
from policies.league.league import (
    MAIN_MEMBER,
    League,
    LeagueSettings,
    external_name,
    round_robin,
    schedule,
)
from policies.league.pool import MAIN, bot_module_id
from policies.league.ratings import LEAGUE_TAU, MAIN_DRIFT, clearly_ahead, rate_games, shared_ranks
from policies.league.store import LeagueStore
from policies.players import BotPlayer, CheckpointPlayer
from tests.league.tiny_policy import write_tiny_policy

RULES = Rules.load("classic", players=4)


class NamedBot(BotPlayer):
    """A built-in bot under another name (main's, in a rating round); the fast evaluator still plays it."""

    def __init__(self, bot: str, name: str = MAIN_MEMBER):
        super().__init__(bot)
        self.name = name


@pytest.fixture
def make_league(tmp_path):
    """``make_league(**settings)``: a League over ``tmp_path/<folder>/league.db`` (default folder ``run``)."""
    stores = []

    def make(folder: str = "run", variant: str = "classic", **settings) -> League:
        store = LeagueStore.open(tmp_path / folder / "league.db")
        stores.append(store)
        return League(store, LeagueSettings(**{"players": 4, **settings}), variant)

    yield make
    for store in stores:
        store.close()


def fake_weights(league: League, written: list[Path]):
    """A write_weights callback: checks the member does not exist yet, then writes a file into the folder."""

    def write(folder: Path) -> None:
        assert league.store.member(folder.name) is None, "the weights must be written before the member exists"
        folder.mkdir(parents=True)
        (folder / "weights.pt").write_text(folder.name)
        written.append(folder)

    return write


def is_ranking(places) -> bool:
    """A finishing order with ties sharing a place (1, 2, 2, 4): each place is 1 + how many finished ahead."""
    return all(p == 1 + sum(q < p for q in places) for p in places)


def names(members) -> list[str]:
    return [m.name for m in members]


# ---------------------------------------------------------------------------- members
def test_main_and_the_bots_become_members_once(make_league):
    league = make_league(bots=("random", "hybrid"), rated_bots=("fast", "hybrid"))
    members = league.store.members()
    assert [(m.name, m.kind, m.spec) for m in members] == [
        (MAIN_MEMBER, "main", "main"), ("fast", "bot", "fast"), ("hybrid", "bot", "hybrid"),
        ("random", "bot", "random")]
    assert all(m.active for m in members)
    # the same league opened again (a resumed run) adds nobody; a new training bot joins
    again = League(league.store, LeagueSettings(players=4, bots=("random", "hybrid", "defensive"),
                                                rated_bots=("fast",)), "classic")
    assert names(again.store.members()) == [MAIN_MEMBER, "fast", "hybrid", "random", "defensive"]
    cross_run = make_league("cross", with_main=False, bots=(), rated_bots=("random", "fast"))
    assert names(cross_run.store.members()) == ["random", "fast"]


def test_an_unknown_pfsp_weighting_fails_at_start_up_in_one_line(make_league):
    with pytest.raises(ValueError) as err:
        make_league(pfsp="hardest")
    assert "'hardest'" in str(err.value) and "squared" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("path, name", [
    ("/x/outputs/train/ppo-run/checkpoints/iter_000007/policy", "ppo-run@7"),
    ("/x/outputs/train/ppo-run/checkpoints/iter_000120/policy", "ppo-run@120"),
    ("/x/ppo-run/checkpoints/iter_000000/policy", "ppo-run@0"),
    ("/x/exported/best/policy", "best"),
    ("/x/exported/best-policy", "best-policy"),
])
def test_external_names_come_from_the_run_and_checkpoint(path, name):
    assert external_name(Path(path)) == name


def test_external_members_join_from_policy_checkpoint_or_run_folders_once(tmp_path, make_league):
    policy = write_tiny_policy(tmp_path / "ppo-run" / "checkpoints" / "iter_000007" / "policy")
    league = make_league()
    member = league.add_external(str(policy))
    assert (member.name, member.kind, member.spec) == ("ppo-run@7", "external", f"ckpt:{policy.resolve()}")
    # the same policy named any other way is the same member
    for same in (f"ckpt:{policy}", str(policy.parent), str(tmp_path / "ppo-run"),
                 str(tmp_path / "ppo-run" / "checkpoints" / ".." / "checkpoints" / "iter_000007")):
        assert league.add_external(same) == member
    assert names(league.store.members(kinds=["external"])) == ["ppo-run@7"]
    # another run folder called the same gets a distinct name; a given name is used as is
    other = write_tiny_policy(tmp_path / "elsewhere" / "ppo-run" / "checkpoints" / "iter_000007" / "policy", seed=1)
    assert league.add_external(str(other)).name == "ppo-run@7#2"
    third = write_tiny_policy(tmp_path / "third" / "policy", seed=2)
    assert league.add_external(str(third), name="champion").name == "champion"
    assert names(league.store.members(kinds=["external"])) == ["ppo-run@7", "ppo-run@7#2", "champion"]
    with pytest.raises(PolicyFileError):
        league.add_external(str(tmp_path / "empty"))
    # settings.external adds them when the league opens, once
    for _ in range(2):
        opened = League(league.store, LeagueSettings(players=4, external=(str(policy), str(third))), "classic")
    assert names(opened.store.members(kinds=["external"])) == ["ppo-run@7", "ppo-run@7#2", "champion"]
    # an external member plays as its policy, under its member name, in a rating round
    player = league.player(member)
    assert isinstance(player, CheckpointPlayer) and player.name == "ppo-run@7"
    assert league.player(member) is player  # loaded once
    ids = {m.name: m.id for m in league.store.members()}
    lineup = (ids["ppo-run@7"], ids["random"], ids["hybrid"], ids["champion"])
    result = league.rating_round(RULES, seed=1, lineups=[lineup], games_per_lineup=4)
    matches = league.store.matches(result.round_id)
    assert result.games == len(matches) == 4
    assert all(sorted(m.seats) == sorted(lineup) and is_ranking(m.places) for m in matches)
    assert sorted(m.seats.index(ids["ppo-run@7"]) for m in matches) == [0, 1, 2, 3]  # seats rotate


# ---------------------------------------------------------------------------- snapshots
def test_add_snapshot_writes_weights_first_fills_free_slots_then_evicts_the_lowest_rated(tmp_path, make_league):
    league = make_league(max_snapshots=2)
    store = league.store
    main = store.member(MAIN_MEMBER)
    store.set_ratings(None, {main.id: (30.0, 4.0)})
    written: list[Path] = []
    write = fake_weights(league, written)

    a, evicted = league.add_snapshot(10, 40_000, write, panel={"random": {"win_rate": 0.5}})
    assert evicted is None
    assert (a.name, a.kind, a.spec, a.slot, a.iteration, a.env_steps) == (
        "main@10", "snapshot", "ckpt:league/main@10", 0, 10, 40_000)
    assert (a.mu, a.sigma) == (30.0, 4.0) and a.panel == {"random": {"win_rate": 0.5}}  # main's rating then
    assert written == [tmp_path / "run" / "league" / "main@10"] == [league.policy_folder(a)]
    assert (league.policy_folder(a) / "weights.pt").read_text() == "main@10"
    b, evicted = league.add_snapshot(20, 80_000, write)
    assert (b.slot, evicted, b.panel) == (1, None, None)
    assert league.slot_members() == {0: a, 1: b}

    # b is newer but rated lower than a: b goes, not the oldest
    store.set_ratings(None, {a.id: (40.0, 2.0), b.id: (20.0, 5.0)})
    round_id = store.add_round("training", "classic", iteration=20)
    store.add_matches(round_id, "classic", [((main.id, a.id, b.id, store.member("random").id), (1, 2, 3, 4))])
    store.set_ratings(round_id, {b.id: (19.0, 5.0)}, iteration=20)
    c, evicted = league.add_snapshot(30, 120_000, write)
    assert evicted.name == "main@20" and c.slot == 1
    gone = store.member("main@20")
    assert not gone.active and gone.slot is None and gone.evicted_at is not None
    assert (gone.mu, gone.sigma, gone.spec) == (19.0, 5.0, "ckpt:league/main@20")  # its record stays
    assert store.matches(round_id)[0].seats[2] == b.id
    assert [h["mu"] for h in store.rating_history() if h["name"] == "main@20"] == [20.0, 19.0]
    assert (league.policy_folder(gone) / "weights.pt").is_file()
    assert league.slot_members() == {0: store.member("main@10"), 1: store.member("main@30")}
    assert names(league.active_snapshots()) == ["main@10", "main@30"]

    # a resumed run reaches iteration 30 again: a distinct name and folder; main@30 (now lowest) goes
    d, evicted = league.add_snapshot(30, 120_500, write)
    assert (d.name, d.slot, evicted.name) == ("main@30.2", 1, "main@30")
    assert written[-1] == tmp_path / "run" / "league" / "main@30.2" != written[-2]
    assert d.spec == "ckpt:league/main@30.2"

    # now main@10 is the lowest: slot 0 is reused, and the matchmaker lists snapshots oldest first
    store.set_ratings(None, {store.member("main@10").id: (10.0, 5.0)})
    e, evicted = league.add_snapshot(40, 160_000, write)
    assert (e.slot, evicted.name) == (0, "main@10")
    assert league.matchmaker(seed=0).snapshots == ("snapshot_1", "snapshot_0")  # main@30.2, then main@40
    assert names(store.members(kinds=["snapshot"])) == ["main@10", "main@20", "main@30", "main@30.2", "main@40"]
    assert names(league.active_snapshots()) == ["main@30.2", "main@40"]


def test_snapshots_rated_alike_evict_the_oldest(make_league):
    league = make_league(max_snapshots=2)
    write = fake_weights(league, [])
    league.add_snapshot(10, 1, write)  # every snapshot starts from main's rating, which has not moved
    league.add_snapshot(20, 2, write)
    _, evicted = league.add_snapshot(30, 3, write)
    assert evicted.name == "main@10"
    assert {s: m.name for s, m in league.slot_members().items()} == {0: "main@30", 1: "main@20"}


def test_a_snapshot_whose_weights_fail_to_write_never_joins(make_league):
    league = make_league(max_snapshots=1)
    league.add_snapshot(10, 1, fake_weights(league, []))
    before = league.store.members()

    def broken(folder: Path) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        league.add_snapshot(20, 2, broken)
    assert league.store.members() == before  # nobody added, nobody evicted
    assert league.slot_members()[0].name == "main@10"


def test_a_snapshot_is_due_every_k_iterations(make_league):
    league = make_league(snapshot_every=5)
    assert [i for i in range(1, 21) if league.snapshot_due(i, None)] == [5, 10, 15, 20]
    assert league.snapshot_due(10, 5)
    assert not make_league("off", snapshot_every=5, max_snapshots=0).snapshot_due(5, None)
    assert not any(make_league("never", snapshot_every=0).snapshot_due(i, None) for i in range(1, 21))


def test_a_snapshot_is_due_when_main_finished_ahead_often_enough_in_the_last_round(make_league):
    settings = {"snapshot_every": 0, "snapshot_win_rate": 0.6, "bots": ("random", "fast", "aggressive"),
                "lineups": 4, "games_per_lineup": 40}
    league = make_league(**settings)
    assert not league.snapshot_due(3, None)  # no round yet
    result = league.rating_round(RULES, seed=3, main_player=NamedBot("heuristic000"), iteration=3)
    assert set(result.main_ahead) == {"random", "fast", "aggressive"}

    # main_ahead is main's share of games finished ahead of each opponent, from the recorded games
    ids = {m.name: m.id for m in league.store.members()}
    matches = league.store.matches(result.round_id)
    for name, rate in result.main_ahead.items():
        met = [m for m in matches if ids[name] in m.seats and ids[MAIN_MEMBER] in m.seats]
        ahead = sum(m.places[m.seats.index(ids[MAIN_MEMBER])] < m.places[m.seats.index(ids[name])] for m in met)
        assert rate == pytest.approx(ahead / len(met))
    assert result.main_vs_league == pytest.approx(sum(result.main_ahead.values()) / 3)
    assert result.main_vs_league >= 0.6  # heuristic000 against the three weakest bots
    assert league.snapshot_due(3, None) and league.snapshot_due(3, 2)
    assert not league.snapshot_due(3, 3)  # already frozen at this iteration
    # the round is stale at later iterations: one good round freezes main once, not at every iteration after it
    assert not league.snapshot_due(4, 3) and not league.snapshot_due(5, None)
    result = league.rating_round(RULES, seed=4, main_player=NamedBot("heuristic000"), iteration=6)
    assert result.iteration == 6 and result.main_vs_league >= 0.6 and league.snapshot_due(6, 3)

    weak = make_league("weak", **{**settings, "bots": ("heuristic000", "hybrid", "defensive")})
    result = weak.rating_round(RULES, seed=3, main_player=NamedBot("random"), iteration=3)
    assert result.main_vs_league < 0.6
    assert not weak.snapshot_due(3, None)


def test_a_round_taken_up_iterations_later_freezes_main_once_by_its_win_rate_alone(make_league):
    # A round played beside training (launch.training.trainers.league_upkeep) arrives iterations after its own.
    settings = {"snapshot_every": 4, "snapshot_win_rate": 0.6, "bots": ("random", "fast", "aggressive"),
                "lineups": 4, "games_per_lineup": 40}
    played = make_league("played", **settings).rating_round(RULES, seed=3, main_player=NamedBot("heuristic000"),
                                                            iteration=3)
    assert played.main_vs_league >= 0.6
    league = make_league(**settings)  # the driver's league, which did not play it
    assert league.snapshot_due(5, None, played) and league.snapshot_due(5, 2, played)
    assert not league.snapshot_due(5, 3, played) and not league.snapshot_due(5, 4, played)  # frozen since
    # asked about a round, only the win-rate rule answers: iteration 8 is the periodic rule's, not the round's
    weak = make_league("weak", **{**settings, "bots": ("heuristic000", "hybrid", "defensive")})
    poor = weak.rating_round(RULES, seed=3, main_player=NamedBot("random"), iteration=3)
    assert league.snapshot_due(8, 3) and not league.snapshot_due(8, 3, poor)


# ---------------------------------------------------------------------------- matchmaking
def snapshots_a_and_b(league: League) -> tuple[int, int, int]:
    write = fake_weights(league, [])
    a, _ = league.add_snapshot(10, 1, write)
    b, _ = league.add_snapshot(20, 2, write)
    return league.store.member(MAIN_MEMBER).id, a.id, b.id


def record_round(league: League, games: list[tuple[tuple[int, ...], tuple[int, ...]]], times: int = 12) -> None:
    with league.store.transaction():
        round_id = league.store.add_round("training", "classic")
        league.store.add_matches(round_id, "classic", games * times)


PFSP_SETTINGS = {"max_snapshots": 3, "bots": ("random", "hybrid"), "main_weight": 0.4,
                 "snapshot_weight": 0.4, "bot_weight": 0.2}


@pytest.mark.parametrize("pfsp, expected_a, expected_b", [
    ("squared", (13 / 14) ** 2, (1 / 14) ** 2),
    ("linear", 13 / 14, 1 / 14),
    ("variance", 13 / 196, 13 / 196),
    ("uniform", 1.0, 1.0),
])
def test_pfsp_favours_the_snapshot_main_loses_to(make_league, pfsp, expected_a, expected_b):
    league = make_league(pfsp=pfsp, **PFSP_SETTINGS)
    main, a, b = snapshots_a_and_b(league)
    random_bot = league.store.member("random").id
    # 12 games: A first, main second, B third, random last. Main never got ahead of A, always of B.
    record_round(league, [((main, a, b, random_bot), (2, 1, 3, 4))])
    mm = league.matchmaker(seed=0)
    assert mm.players == 4 and mm.snapshots == ("snapshot_0", "snapshot_1")
    assert mm.bots == (bot_module_id("random"), bot_module_id("hybrid"))
    # x = main's chance to finish ahead, shrunk by 2 prior games: A 1/14, B 13/14, random 13/14, hybrid (unmet) 1/2
    assert mm.snapshot_priorities == pytest.approx((expected_a, expected_b))
    f = {"squared": lambda x: (1 - x) ** 2, "linear": lambda x: 1 - x, "variance": lambda x: x * (1 - x),
         "uniform": lambda x: 1.0}[pfsp]
    assert mm.bot_priorities == pytest.approx((f(13 / 14), f(1 / 2)))
    weights = mm.opponent_weights()
    assert sum(weights.values()) == pytest.approx(1.0) and weights[MAIN] == pytest.approx(0.4)
    assert weights["snapshot_0"] + weights["snapshot_1"] == pytest.approx(0.4)
    if pfsp in ("squared", "linear"):
        assert weights["snapshot_0"] > 10 * weights["snapshot_1"]
    else:
        assert weights["snapshot_0"] == pytest.approx(weights["snapshot_1"]) == pytest.approx(0.2)


def test_pfsp_looks_at_the_last_rounds_only(make_league):
    league = make_league(pfsp="linear", pfsp_rounds=2, **PFSP_SETTINGS)
    main, a, b = snapshots_a_and_b(league)
    r = league.store.member("random").id
    record_round(league, [((main, a, b, r), (2, 1, 3, 4))])  # round 1: main behind A, ahead of B
    assert league.matchmaker(seed=0).snapshot_priorities == pytest.approx((13 / 14, 1 / 14))
    record_round(league, [((main, a, b, r), (2, 3, 1, 4))])  # rounds 2 and 3: main ahead of A, behind B
    record_round(league, [((main, a, b, r), (2, 3, 1, 4))])
    assert league.matchmaker(seed=0).snapshot_priorities == pytest.approx((1 / 26, 25 / 26))
    # all three rounds: main ahead of A in 24 of 36 games, of B in 12
    assert league.matchmaker(seed=0, rounds_back=3).snapshot_priorities == pytest.approx((1 - 25 / 38, 1 - 13 / 38))


def test_the_matchmakers_seats_follow_its_opponent_weights_and_always_include_main(make_league):
    league = make_league(pfsp="squared", **PFSP_SETTINGS)
    main, a, b = snapshots_a_and_b(league)
    record_round(league, [((main, a, b, league.store.member("random").id), (2, 1, 3, 4))])
    mm = league.matchmaker(seed=11)
    weights = mm.opponent_weights()
    episodes = 6000
    counts: Counter[str] = Counter()
    for key in map(str, range(episodes)):
        modules = mm.matchup(key).modules
        assert len(modules) == 4 and MAIN in modules
        counts.update(modules)
    # one seat is main by rule; each of the other three follows the weights
    counts[MAIN] -= episodes
    draws = 3 * episodes
    assert set(counts) <= set(weights)
    for module, weight in weights.items():
        assert counts[module] / draws == pytest.approx(weight, abs=0.012), module
    assert counts["snapshot_0"] > 20 * max(1, counts["snapshot_1"])  # main loses to A: A is met far more often
    # another seed draws other line-ups with the same weights
    other = league.matchmaker(seed=12)
    assert other.opponent_weights() == weights
    assert [other.matchup(str(k)) for k in range(50)] != [mm.matchup(str(k)) for k in range(50)]


# ---------------------------------------------------------------------------- rating rounds
BOTS_ONLY = {"with_main": False, "bots": ("random",),
             "rated_bots": ("fast", "hybrid", "heuristic000", "defensive"), "lineups": 8, "games_per_lineup": 40}


def test_a_rating_round_of_bots_records_every_game_and_rates_the_strong_above_random(make_league):
    league = make_league(**BOTS_ONLY)
    store = league.store
    before = {m.name: (m.mu, m.sigma) for m in store.members()}
    progress = []
    result = league.rating_round(RULES, seed=5, iteration=7, env_steps=700, label="check",
                                 progress=lambda done, total: progress.append((done, total)))
    assert progress == [(k, 8) for k in range(1, 9)]
    matches = store.matches(result.round_id)
    assert result.games == len(matches) == 8 * 40  # bots always finish classic games
    ids = {m.id for m in store.members()}
    for match in matches:
        assert len(set(match.seats)) == 4 and set(match.seats) <= ids and is_ranking(match.places)
        assert match.variant == "classic"
    rounds = store.rounds()
    assert [(r["id"], r["label"], r["iteration"], r["env_steps"], r["variant"]) for r in rounds] == [
        (result.round_id, "check", 7, 700, "classic")]
    # every active member's rating after the round is in the history, and is its current rating
    history = [h for h in store.rating_history() if h["round_id"] == result.round_id]
    assert sorted(h["name"] for h in history) == sorted(before) == sorted(result.ratings)
    now = {m.name: m for m in store.members()}
    for h in history:
        assert (h["mu"], h["sigma"]) == (now[h["name"]].mu, now[h["name"]].sigma) == result.ratings[h["name"]]
        assert h["iteration"] == 7
    played = {store.member(i).name for m in matches for i in m.seats}
    assert all(now[name].sigma < before[name][1] for name in played)
    assert now["heuristic000"].ordinal > now["random"].ordinal
    assert now["hybrid"].ordinal > now["random"].ordinal
    assert now["random"].mu < before["random"][0] < now["heuristic000"].mu


def test_a_round_of_given_members_plays_only_those_still_active_and_records_more_with_it_or_not_at_all(
        make_league):
    league = make_league(bots=("random", "fast", "hybrid", "defensive", "aggressive"), lineups=4,
                         games_per_lineup=8)
    store = league.store
    field = [store.member(name).id for name in ("random", "fast", "hybrid", "defensive", "aggressive")]
    store.evict(store.member("aggressive").id)  # left the league since the round was asked for
    late = store.add_member("heuristic000", "bot", "heuristic000")  # joined since: not in the round's field
    written = []

    def record(ratings):
        written.append(dict(ratings))
        store.set_meta("recorded-with-the-round", "yes")

    result = league.rating_round(RULES, seed=2, members=field, record_with=record)
    seated = {i for m in store.matches(result.round_id) for i in m.seats}
    assert seated == set(field[:4]) and late.id not in seated
    assert written == [{store.member(n).id: r for n, r in result.ratings.items()}]
    assert store.get_meta("recorded-with-the-round") == "yes"

    def broken(ratings):
        store.set_meta("half-written", "yes")
        raise OSError("disk full")

    rounds, matches, history = store.rounds(), store.matches(), store.rating_history()
    with pytest.raises(OSError, match="disk full"):
        league.rating_round(RULES, seed=3, members=field, record_with=broken)
    assert (store.rounds(), store.matches(), store.rating_history()) == (rounds, matches, history)
    assert store.get_meta("half-written") is None  # the round and what goes with it: whole or not at all


def test_a_rating_round_is_reproducible_from_its_seed(make_league):
    def play(folder: str, seed: int):
        league = make_league(folder, **{**BOTS_ONLY, "lineups": 3, "games_per_lineup": 12})
        result = league.rating_round(RULES, seed=seed)
        return [(m.seats, m.places) for m in league.store.matches(result.round_id)], result.ratings

    first, again, other = play("a", 9), play("b", 9), play("c", 10)
    assert first == again
    assert first[0] != other[0]


def test_a_round_without_mains_player_leaves_main_out(make_league):
    league = make_league(bots=("random", "fast", "hybrid", "defensive"), lineups=4, games_per_lineup=8)
    main = league.store.member(MAIN_MEMBER)
    result = league.rating_round(RULES, seed=1)
    assert result.main_ahead == {} and result.main_vs_league is None and MAIN_MEMBER not in result.ratings
    assert all(main.id not in m.seats for m in league.store.matches(result.round_id))
    assert league.store.member(MAIN_MEMBER) == main
    assert MAIN_MEMBER not in {h["name"] for h in league.store.rating_history()}
    with pytest.raises(ValueError, match="main's current player"):
        league.player(main)


def test_a_round_with_main_seats_it_in_every_other_line_up(make_league):
    league = make_league(bots=("random", "fast", "hybrid", "defensive"), lineups=6, games_per_lineup=8)
    main = league.store.member(MAIN_MEMBER)
    result = league.rating_round(RULES, seed=2, main_player=NamedBot("hybrid", MAIN_MEMBER), iteration=4)
    matches = league.store.matches(result.round_id)
    assert len(matches) == 48
    with_main = [main.id in m.seats for m in matches]
    for k in range(0, 6, 2):  # line-ups 0, 2 and 4 are main's; the others are drawn from everyone
        assert all(with_main[8 * k:8 * (k + 1)])
    assert MAIN_MEMBER in result.ratings and league.store.member(MAIN_MEMBER).sigma < main.sigma
    assert league.main_standing()[1] == 5


def test_the_summary_names_mains_rank_once_it_has_played_and_says_so_before(make_league, tmp_path):
    from launch.training.trainers.rllib import standing_line

    league = make_league(bots=("random", "fast", "hybrid", "defensive"), lineups=2, games_per_lineup=4)
    show = f"python launch/league.py show league={tmp_path}"
    assert standing_line(league, tmp_path) == f"main has played no rated game in the league ({show})"
    league.rating_round(RULES, seed=2, main_player=NamedBot("hybrid", MAIN_MEMBER), iteration=4)
    rank, members, main = league.main_standing()
    line = standing_line(league, tmp_path)
    assert line.startswith(f"main is {rank} of {members} in the league (mu {main.mu:.1f} ± "), line
    assert line.endswith(f"; {show})"), line


def flat(ratings: dict[int, tuple[float, float]]) -> dict[tuple[int, str], float]:
    """``{id: (mu, sigma)}`` as ``{(id, "mu"): mu, (id, "sigma"): sigma}``: pytest.approx compares flat dicts only."""
    return {(member, key): value for member, pair in ratings.items() for key, value in zip(("mu", "sigma"), pair)}


def test_a_round_rates_frozen_members_without_drift_and_widens_main_first(make_league):
    """Frozen members keep every game (tau 0); main, which trained since, has its sigma widened before the round."""
    league = make_league(bots=("random", "fast", "hybrid", "defensive"), lineups=4, games_per_lineup=8)
    store = league.store
    main = store.member(MAIN_MEMBER)
    store.set_ratings(None, {main.id: (30.0, 1.0), store.member("fast").id: (26.0, 0.8)})
    before = {m.id: (m.mu, m.sigma) for m in store.members()}
    result = league.rating_round(RULES, seed=3, main_player=NamedBot("hybrid", MAIN_MEMBER), iteration=10)
    games = [(m.seats, m.places) for m in store.matches(result.round_id)]
    expected = rate_games(games, before, tau=LEAGUE_TAU, changed={main.id: MAIN_DRIFT})
    assert flat({m.id: (m.mu, m.sigma) for m in store.members()}) == pytest.approx(flat(expected))
    assert flat(expected) != pytest.approx(flat(rate_games(games, before)))
    # the shared rank main_standing reports is the leaderboard's, among the members that played
    rank, ranked, now = league.main_standing()
    ratings = {m.id: (m.mu, m.sigma) for m in store.members()}
    assert (rank, ranked, now.id) == (dict(shared_ranks(ratings))[main.id], 5, main.id)
    tied = league.within_noise(now)
    assert main.id not in {m.id for m in tied}
    assert all(not clearly_ahead(ratings[m.id], ratings[main.id]) and not clearly_ahead(ratings[main.id], ratings[m.id])
               for m in tied)


def test_schedule_draws_distinct_members_and_focuses_on_every_other_line_up():
    ids = [3, 5, 8, 13, 21, 34]
    lineups = schedule(ids, 4, 10, seed=4, focus=8)
    assert len(lineups) == 10 and all(len(set(lineup)) == 4 and set(lineup) <= set(ids) for lineup in lineups)
    assert all(lineup[0] == 8 for lineup in lineups[::2])
    assert schedule(ids, 4, 10, seed=4, focus=8) == lineups != schedule(ids, 4, 10, seed=5, focus=8)
    with pytest.raises(ValueError, match="at least 4 members"):
        schedule(ids[:3], 4, 2, seed=0)


# ---------------------------------------------------------------------------- round robin
@pytest.mark.parametrize("members, players, games", [(5, 4, 100), (5, 4, 20), (7, 4, 1000), (4, 2, 30), (4, 4, 4)])
def test_round_robin_plays_every_combination_when_games_allow(members, players, games):
    ids = list(range(10, 10 + members))
    lineups, per_lineup = round_robin(ids, players, games, seed=0)
    assert sorted(lineups) == sorted(itertools.combinations(ids, players))
    assert per_lineup % players == 0 and per_lineup >= players
    assert len(lineups) * per_lineup <= games < len(lineups) * (per_lineup + players)  # as many as fit


@pytest.mark.parametrize("members, players, games", [(5, 4, 19), (8, 4, 100), (8, 2, 20), (6, 3, 7), (6, 4, 2)])
def test_round_robin_samples_distinct_sets_when_games_are_few(members, players, games):
    ids = list(range(members))
    lineups, per_lineup = round_robin(ids, players, games, seed=3)
    every = list(itertools.combinations(ids, players))
    assert len(lineups) * players > 0 and per_lineup == players
    assert len(lineups) == max(1, games // players) < len(every)
    assert len(set(lineups)) == len(lineups) and set(lineups) <= set(every)
    assert round_robin(ids, players, games, seed=3) == (lineups, per_lineup)
    if len(lineups) > 1:
        assert round_robin(ids, players, games, seed=4)[0] != lineups


def test_round_robin_needs_enough_members():
    with pytest.raises(ValueError, match="at least 4 members"):
        round_robin([1, 2, 3], 4, 100, seed=0)
    with pytest.raises(ValueError, match="at least 2 members"):
        round_robin([1], 2, 100, seed=0)


def test_a_round_robin_round_rates_every_pairing(make_league):
    league = make_league(with_main=False, bots=(), rated_bots=("random", "fast", "hybrid", "defensive",
                                                                          "heuristic000"))
    ids = [m.id for m in league.store.members()]
    lineups, per_lineup = round_robin(ids, 4, 40, seed=0)
    assert (len(lineups), per_lineup) == (5, 8)
    result = league.rating_round(RULES, 0, label="round robin", lineups=lineups, games_per_lineup=per_lineup)
    matches = league.store.matches(result.round_id)
    assert result.games == len(matches) == 40
    assert Counter(tuple(sorted(m.seats)) for m in matches) == {tuple(sorted(lineup)): 8 for lineup in lineups}
    # seats rotate within a line-up: each member sits in each seat twice in its 8 games
    for lineup in lineups:
        games = [m for m in matches if sorted(m.seats) == sorted(lineup)]
        for member in lineup:
            assert Counter(g.seats.index(member) for g in games) == {0: 2, 1: 2, 2: 2, 3: 2}
