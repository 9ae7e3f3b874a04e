"""Invariants over random games (hypothesis): conservation, ranges, safety, termination, places."""
from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ludo_env.engine import compile_rules, legal_masks, new_batch, step_batch
from ludo_env.engine.layout import BASE, EV_ILLEGAL_REPLACED, N_FINISHED, OVER, PLACES, TOKENS, UNUSED
from ludo_env.rules import Rules, available_variants

# Every shipped variant at every player count it allows: a new variant file is tested without an edit here.
CONFIGS = st.sampled_from(
    [(name, players) for name in available_variants() for players in Rules.load(name).allowed_players]
)


def check_state(rules: Rules, state: np.ndarray) -> None:
    tokens = state[TOKENS : TOKENS + 16].reshape(4, 4)
    low = BASE if rules.start_in_base else 0
    live = tokens[: rules.players, : rules.tokens]
    # conserved: exactly players x tokens live tokens, every one on its path
    assert ((live >= low) & (live <= rules.home)).all(), live
    unused = np.ones((4, 4), dtype=bool)
    unused[: rules.players, : rules.tokens] = False
    assert (tokens[unused] == UNUSED).all()
    # finished seats have all tokens home and distinct places 1..n_finished
    places = state[PLACES : PLACES + rules.players]
    finished = [s for s in range(rules.players) if (live[s] == rules.home).all()]
    if not state[OVER]:
        assert sorted(places[places > 0].tolist()) == list(range(1, state[N_FINISHED] + 1))
        assert set(finished) == set(np.flatnonzero(places).tolist())


def check_no_shared_unsafe_square(rules: Rules, state: np.ndarray) -> None:
    owner: dict[int, int] = {}
    tokens = state[TOKENS : TOKENS + 16].reshape(4, 4)
    for seat in range(rules.players):
        for p in tokens[seat, : rules.tokens]:
            if 0 <= p < rules.track_steps:
                square = (rules.seat_starts[seat] + p) % rules.track_squares
                if square in rules.safe_squares:
                    continue
                assert owner.setdefault(square, seat) == seat, f"two colours on square {square}"


@settings(max_examples=25, deadline=None)
@given(config=CONFIGS, seed=st.integers(0, 2**31), choice_seed=st.integers(0, 2**31))
def test_random_games_keep_every_invariant_and_end(config, seed, choice_seed):
    name, players = config
    rules = Rules.load(name, players=players)
    tab = compile_rules(rules)
    batch = 16
    states, rng = new_batch(tab, batch, seed)
    chooser = np.random.default_rng(choice_seed)
    events = np.zeros(batch, dtype=np.int32)
    masks = np.zeros((batch, 4), dtype=np.int8)
    legal_masks(states, tab, masks)
    for _ in range(20_000):
        if states[:, OVER].all():
            break
        # a random legal token per game, chosen outside the engine
        noise = chooser.random((batch, 4)) + masks
        choices = np.argmax(noise, axis=1).astype(np.int64)
        step_batch(states, tab, rng, choices, events, masks)
        assert not (events & EV_ILLEGAL_REPLACED).any(), "a legal choice was treated as illegal"
        for state in states:
            check_state(rules, state)
            if name == "classic":
                check_no_shared_unsafe_square(rules, state)
    assert states[:, OVER].all(), "every game ends"
    for state in states:
        places = state[PLACES : PLACES + rules.players].tolist()
        assert 1 in places and all(1 <= p <= rules.players for p in places)
        # competition ranking: a place k is shared by c seats, and the next place is k + c
        counts = Counter(places)
        for place, count in counts.items():
            nxt = place + count
            assert nxt > rules.players or nxt in counts
