"""The ``afterstates`` observation encoder: what each legal move leads to, in `afterstate_features` terms.

A token's score in Ludo is mostly the worth of the position its move leaves
(`ludo_env.engine.afterstates`: the move applied, nothing rolled yet), which is
what the TD(λ) agents rate (`policies.td_lambda`). This encoder gives an RLlib
module the same view: one block per token describing its afterstate, so a
per-token network (the token-set net, `policies.networks`) scores moves by
their outcomes instead of inferring them from the board.

``afterstates`` (450 floats, per-token blocks, see
`ludo_env.observations.token_layout`):

* ``own{t}.row{r}.<feature>`` for each of the mover's 4 tokens t: the
  `afterstate_features` seat block (22 features) of every seat of the position
  after moving t, the mover's seat first (r = 0) and the others in turn order,
  88 floats; then ``own{t}.legal``, 1 when t may move. A block is all zeros for
  a token that may not move (and for tokens and seats the variant lacks).
* Globals: ``die1..die6``, the pending roll one-hot; ``now.row{r}.<feature>``,
  the same 88 features of the position as it stands (the mover's seat first).

A block's ``row0.rolls_next`` and ``row0.sixes`` say whether the move earns
the mover another roll (a six, a capture or a token home, as the variant
says): the afterstate is the engine's own (`apply_move`), so the encoder
predicts exactly what `step_batch` will play.
"""
from __future__ import annotations

import numpy as np

from ludo_env.afterstate_features import SEAT_FEATURE_NAMES, SEAT_FEATURES, seat_blocks
from ludo_env.engine.jit import jit
from ludo_env.engine.kernels import apply_move, legal_mask
from ludo_env.engine.layout import CURRENT, DIE, R_PLAYERS
from ludo_env.rules import DIE_FACES, MAX_PLAYERS, MAX_TOKENS

POSITION_FEATURES = MAX_PLAYERS * SEAT_FEATURES  # one position seen from the mover: 88
TOKEN_BLOCK = POSITION_FEATURES + 1  # ... and the legal flag
GLOBALS_AT = MAX_TOKENS * TOKEN_BLOCK
SIZE = GLOBALS_AT + DIE_FACES + POSITION_FEATURES  # 450


def afterstate_names() -> list[str]:
    position = [f"row{r}.{f}" for r in range(MAX_PLAYERS) for f in SEAT_FEATURE_NAMES]
    names = [f"own{t}.{f}" for t in range(MAX_TOKENS) for f in position + ["legal"]]
    return names + [f"die{d}" for d in range(1, DIE_FACES + 1)] + [f"now.{f}" for f in position]


@jit
def _write_position(position, viewer, tab, blocks, out, at):
    """`out[at : at + POSITION_FEATURES]` = every seat's block of `position`, `viewer`'s seat first."""
    seat_blocks(position, tab, blocks)
    players = tab[R_PLAYERS]
    for r in range(players):
        seat = (viewer + r) % players
        for k in range(SEAT_FEATURES):
            out[at + r * SEAT_FEATURES + k] = blocks[seat, k]


@jit
def afterstates_kernel(state, tab, view, mask, out):
    """The encoder's features of one decision state into a zeroed `out` (``view`` is unused: blocks are relative)."""
    blocks = np.zeros((MAX_PLAYERS, SEAT_FEATURES), dtype=np.float32)
    legal_mask(state, tab, mask)
    for t in range(MAX_TOKENS):
        if mask[t]:
            after = state.copy()
            apply_move(after, tab, t)
            # The afterstate's CURRENT is whoever rolls next (`rolls_next`); the frame stays the decider's.
            _write_position(after, state[CURRENT], tab, blocks, out, t * TOKEN_BLOCK)
            out[t * TOKEN_BLOCK + POSITION_FEATURES] = 1.0
    if state[DIE] > 0:
        out[GLOBALS_AT + state[DIE] - 1] = 1.0
    _write_position(state, state[CURRENT], tab, blocks, out, GLOBALS_AT + DIE_FACES)
