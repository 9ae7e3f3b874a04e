"""The numba Ludo engine: pure functions over small int16 arrays, no RL imports.

Layout of the state row and the compiled rule table: `layout`. Scalar kernels
(legal mask, roll, move, turn, end): `kernels`. Batched play: `batch`. The
mover's point of view: `frame`. Checked single-game play: `Game`.
"""
from ludo_env.engine.batch import legal_masks, new_batch, play_random, reset_batch, step_batch
from ludo_env.engine.frame import mover_view_batch, unview, view_from
from ludo_env.engine.game import Game, IllegalMoveError
from ludo_env.engine.layout import STATE_LEN, compile_rules, event_names

__all__ = [
    "Game",
    "IllegalMoveError",
    "STATE_LEN",
    "compile_rules",
    "event_names",
    "legal_masks",
    "mover_view_batch",
    "new_batch",
    "play_random",
    "reset_batch",
    "step_batch",
    "unview",
    "view_from",
]
