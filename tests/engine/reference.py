"""Plain-Python Ludo rules, written apart from the numba engine, for the tests only.

It reads the `Rules` fields directly (not the compiled table) and thinks in
board squares and token lists rather than lookup tables, so a shared mistake
between the two is unlikely. Tests drive both with the same dice and choices
and require identical states, legal masks and events after every roll and move.
"""
from __future__ import annotations

from ludo_env.rules import Rules

BASE = -1


class RefGame:
    def __init__(self, rules: Rules, first_seat: int = 0) -> None:
        self.rules = rules
        start = BASE if rules.start_in_base else 0
        self.tokens = [[start] * rules.tokens for _ in range(rules.players)]
        self.current = first_seat
        self.die = 0
        self.sixes = 0
        self.places = [0] * rules.players
        self.ply = 0
        self.over = False

    # ------------------------------------------------------------ geometry
    def square(self, seat: int, progress: int) -> int:
        return (self.rules.seat_starts[seat] + progress) % self.rules.track_squares

    def on_track(self, progress: int) -> bool:
        return 0 <= progress < self.rules.track_steps

    def opponents_at(self, seat: int, square: int) -> list[tuple[int, int]]:
        return [
            (other, t)
            for other in range(self.rules.players)
            if other != seat
            for t, p in enumerate(self.tokens[other])
            if self.on_track(p) and self.square(other, p) == square
        ]

    def blocked(self, seat: int, square: int) -> bool:
        for other in range(self.rules.players):
            if other == seat:
                continue
            here = [p for p in self.tokens[other] if self.on_track(p) and self.square(other, p) == square]
            if len(here) >= 2:
                return True
        return False

    def restart(self) -> int:
        return BASE if self.rules.start_in_base else 0

    # ------------------------------------------------------------- legality
    def destination(self, seat: int, t: int, die: int) -> int | None:
        r = self.rules
        p = self.tokens[seat][t]
        if p == r.home:
            return None
        if p == BASE:
            if die not in r.enter_rolls:
                return None
            if r.blockades and self.blocked(seat, self.square(seat, 0)):
                return None
            return 0
        if r.blockades:
            for step in range(p + 1, p + die + 1):
                if step < r.track_steps and self.blocked(seat, self.square(seat, step)):
                    return None
        q = p + die
        if q <= r.home:
            return q
        if r.overshoot == "exact":
            return None
        if r.overshoot == "bounce":
            return r.home - (q - r.home)
        return r.home

    def legal(self) -> list[int]:
        mask = [0, 0, 0, 0]
        if self.over or not self.die:
            return mask
        for t in range(self.rules.tokens):
            if self.destination(self.current, t, self.die) is not None:
                mask[t] = 1
        return mask

    # ---------------------------------------------------------------- turns
    def next_seat(self) -> None:
        n = self.rules.players
        seat = self.current
        for _ in range(n):
            seat = (seat + 1) % n
            if not self.places[seat]:
                break
        self.current = seat
        self.die = 0
        self.sixes = 0

    def roll(self, die: int) -> set[str]:
        r = self.rules
        self.ply += 1
        if r.bonus_roll_on_six:
            self.sixes = self.sixes + 1 if die == 6 else 0
            if r.sixes_forfeit and self.sixes >= r.sixes_forfeit:
                self.next_seat()
                return {"forfeit"}
        self.die = die
        if any(self.legal()):
            return set()
        if die == 6 and r.bonus_roll_on_six:
            self.die = 0
            return {"no_move", "bonus_roll"}
        self.next_seat()
        return {"no_move"}

    def next_star_step(self, seat: int, progress: int) -> int | None:
        """Progress of the next star on this seat's track after `progress`, or None past the track."""
        stars = set(self.rules.star_squares)
        step = progress + 1
        while step < self.rules.track_steps:
            if self.square(seat, step) in stars:
                return step
            step += 1
        return None

    def move(self, t: int) -> set[str]:
        r = self.rules
        seat, die = self.current, self.die
        assert self.legal()[t], "reference asked for an illegal move"
        p = self.tokens[seat][t]
        q = self.destination(seat, t, die)
        events: set[str] = set()
        if p == BASE:
            events.add("entered")
            self.tokens[seat][t] = 0
            if r.enter_captures:
                victims = self.opponents_at(seat, self.square(seat, 0))
                self.capture(victims, events)
            else:
                self.land(seat, t, 0, events)
        elif self.on_track(q):
            self.land(seat, t, q, events)
        else:
            if p + die > r.home and q < r.home:
                events.add("bounce")
            self.tokens[seat][t] = q
        if self.tokens[seat][t] == r.home:
            events.add("token_home")
            if all(x == r.home for x in self.tokens[seat]):
                finished = sum(1 for x in self.places if x) + 1
                self.places[seat] = finished
                events.add("seat_finished")
                if r.end == "first_winner" or finished >= r.players - 1:
                    self.finish()
                    events.add("game_over")
                    return events
                self.next_seat()
                return events
        bonus = (
            (die == 6 and r.bonus_roll_on_six)
            or (any(e.startswith("capture") for e in events) and r.bonus_roll_on_capture)
            or ("token_home" in events and r.bonus_roll_on_home)
        )
        if bonus:
            self.die = 0
            events.add("bonus_roll")
        else:
            self.next_seat()
        return events

    def capture(self, victims: list[tuple[int, int]], events: set[str]) -> None:
        if not victims:
            return
        for other, u in victims:
            self.tokens[other][u] = self.restart()
        already = sum(int(e.split(":")[1]) for e in events if e.startswith("capture:"))
        events.discard(f"capture:{already}")
        events.add(f"capture:{already + len(victims)}")

    def land(self, seat: int, t: int, q: int, events: set[str], jumped: bool = False) -> None:
        r = self.rules
        square = self.square(seat, q)
        victims = self.opponents_at(seat, square)
        safe = square in r.safe_squares
        if jumped and r.star_capture == "landing":
            self.tokens[seat][t] = q  # the jump's end is passed as if empty
            return
        if victims and safe and r.safe_square_rule == "mover_home":
            self.tokens[seat][t] = self.restart()
            events.add("sent_back")
            return
        if len(victims) > 1 and not safe and r.stack_rule == "mover_home":
            self.tokens[seat][t] = self.restart()
            events.add("sent_back")
            return
        if r.star_jump and not jumped and square in r.star_squares:
            nxt = self.next_star_step(seat, q)
            if nxt is not None or r.last_star_to_home:
                events.add("star")
                if victims and not safe and r.star_capture in ("both", "landing"):
                    self.capture(victims, events)
                if nxt is None:
                    self.tokens[seat][t] = r.home
                else:
                    self.land(seat, t, nxt, events, jumped=True)
                return
        self.tokens[seat][t] = q
        if victims and not safe:
            self.capture(victims, events)

    def pips(self, seat: int) -> int:
        return sum(p + 1 for p in self.tokens[seat] if p >= 0)

    def finish(self) -> None:
        done = sum(1 for x in self.places if x)
        playing = [s for s in range(self.rules.players) if not self.places[s]]
        for s in playing:
            ahead = sum(1 for o in playing if self.pips(o) > self.pips(s))
            self.places[s] = done + 1 + ahead
        self.over = True
        self.die = 0

    def to_dict(self) -> dict:
        return {
            "tokens": [list(row) for row in self.tokens],
            "current": self.current,
            "die": self.die,
            "sixes": self.sixes,
            "places": list(self.places),
            "ply": self.ply,
            "over": int(self.over),
        }

    @classmethod
    def from_dict(cls, rules: Rules, record: dict) -> RefGame:
        game = cls(rules)
        game.tokens = [list(row) for row in record["tokens"]]
        game.current, game.die, game.sixes = record["current"], record["die"], record["sixes"]
        game.places, game.ply, game.over = list(record["places"]), record["ply"], bool(record["over"])
        return game
