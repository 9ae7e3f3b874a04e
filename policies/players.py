"""One way to ask any agent for a move: the `Player` protocol and player specs.

A `Player` answers ``act(states, tab, masks) -> choices``: `states` are
absolute engine rows ``(B, STATE_LEN)`` int16, each waiting on a decision for
its mover (``ludo_env.engine.layout``), `tab` is ``compile_rules(rules)``,
`masks` the ``(B, 4)`` int8 legal tokens, and `choices` one legal token index
per game as int64 ``(B,)``. Players are asked in batches: one call covers
every game in which that player is to move.

`make_player(spec, seed)` builds a player from a string:

``<bot name>``
    a built-in bot from `policies.bots` (``random``, ``fast``, ``aggressive``,
    ``defensive``, ``hybrid``, ``semi_smart``, ``heuristic000``). Built-in bots
    also expose ``bot_id`` and ``act_streams``, so a tournament can play them
    inside numba and key their randomness by game.
``py:package.module:ClassName``
    your own bot (below). The module is imported as Python would from the
    current directory. This is code: it is taken from a command line only,
    never from a league database, a file, a record or a request
    (`stored_spec` refuses it there).
``ckpt:<path>``
    a saved agent, loaded by its kind (``policies.saved.REGISTRY``): a PPO or DQN
    policy (needs torch and ray), the GA-evolved network, a TD(λ) value played
    greedily. No pickle runs: an RLlib checkpoint (``class_and_ctor_args.pkl``) is
    refused in one line (``policies.modules.load_checkpoint_player``).
``search:<path>?depth=2&opponent=maxn``
    expectimax over the dice on the value saved at `path` (``policies.search``).
``mcts:<path>?sims=64``
    Monte Carlo tree search with chance nodes, a PPO policy as prior and its
    critic at the leaves (``policies.mcts``).
``rollout:<player spec>?n=16``
    each legal token scored by games played out from it to the end by another
    player (a bot, ``ckpt:<path>`` or ``champion:<variant>``) at every seat
    (``policies.rollout``).
``champion:<variant>``
    the shipped champion of a rule set (``policies.champions``), played as
    ``ckpt:`` plays its policy folder, under this name.
``exact:optimal`` / ``exact:best_response?to=<player spec>``
    the minimax-optimal policy of a solved two-player game of 1 or 2 tokens
    each, or the exact best response to another player there
    (``policies.exact``); any other game is refused in one line.

A bad spec raises `PlayerSpecError` with one line that lists what is allowed. A learned player
(``ckpt:``, ``search:``, ``mcts:``, ``champion:``, and ``rollout:`` over one of them) knows the variant and
player count it was trained for (``trained_for``, from its ``policy.json``); `check_fits` refuses it in a game
of others.

Bring your own bot
------------------
Write a class with one batched method, ``choose(view, die, mask)``:

* `view`: ``(B, 4, 4)`` int16, every token seen from the mover
  (`ludo_env.engine.frame.view_from`): row 0 is the mover, the next rows
  follow turn order; -1 is base, 0..51 a track square counted from the
  mover's start square, 52 + k is k steps into the owner's home column
  (52 is the rules' `track_squares`), and -2 marks absent seats and tokens;
* `die`: ``(B,)`` the die to move by;
* `mask`: ``(B, 4)`` int8, 1 for each token that may move (at least one);

and return one token index (0..3) per game. It is built as ``ClassName()``,
or ``ClassName(seed=seed)`` if its constructor takes a `seed`. Answers are
checked: a wrong shape or an illegal token stops the run with one line that
names the class. One call of ``choose`` may take at most ``move_time_limit``
seconds (`make_player`; default `DEFAULT_MOVE_TIME_LIMIT`, 30 s): a call
decides a whole batch, so the limit is per call, not per game, and a slower
call stops the run with `MoveTimeout`. What the bot prints goes to stderr, so
a command's stdout (a results table) stays clean. For example, "move the token that is furthest behind":

```python
import numpy as np

class FurthestBehind:
    \"\"\"Move the legal token with the least progress; a token in base is furthest behind.\"\"\"

    def choose(self, view, die, mask):
        mine = view[:, 0, :].astype(np.int64)  # row 0: the mover's own tokens, in its own frame
        return np.where(mask == 1, mine, 1_000).argmin(axis=1)
```

Saved as ``mybots.py`` it plays as ``py:mybots:FurthestBehind``.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import os
import re
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ludo_env.engine.frame import mover_view_batch
from ludo_env.engine.jit import kernel
from ludo_env.engine.layout import DIE
from policies.champions import CHAMPION_PREFIX, ChampionError, champion_folder
from policies.rollout import ROLLOUT_PREFIX, make_rollout_player


class PlayerSpecError(ValueError):
    """A player spec cannot be turned into a player; the message is one line for the user."""


class PlayerError(RuntimeError):
    """A player answered with something that is not one legal token per game; one line."""


DEFAULT_MOVE_TIME_LIMIT = 30.0
"""Seconds one call of a ``py:`` bot's ``choose`` may take (`PythonPlayer.time_limit`). A call decides a whole batch
(in a tournament up to ``chunk`` games), so the limit is per call, not per game: generous for a Python loop over a
batch, short enough that a bot that hangs stops the run."""


@runtime_checkable
class Player(Protocol):
    """Anything that picks one legal token per game from absolute engine states.

    A player may also set ``thread_safe = True``: its answers depend on its arguments alone and two threads may
    call it at once on different games, so a tournament may play its chunks in threads
    (`policies.tournament`, Threads). Without it, a player is asked from one thread only.
    """

    name: str

    def act(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray: ...


def bot_names() -> tuple[str, ...]:
    from policies.bots import BOT_NAMES

    return tuple(BOT_NAMES)


def allowed_specs() -> str:
    """The one-line list of accepted specs, for error messages."""
    return (f"use a bot name ({', '.join(bot_names())}), py:package.module:ClassName, ckpt:<path>, "
            "search:<path>?depth=2, mcts:<path>?sims=64, rollout:<player spec>?n=16, champion:<variant>, "
            "exact:optimal or exact:best_response?to=<player spec>")


CODE_PREFIX = "py:"
"""The spec kind that imports code: taken from a command line only (`stored_spec`)."""
_NAMES_CODE = re.compile(r"(?:^|[:=?&,])\s*py:")
"""A ``py:`` spec at the start of a spec, or nested in one (``rollout:py:...``, ``...?to=py:...``)."""


def names_code(spec: str) -> bool:
    """Whether `spec` is a ``py:`` bot or has one nested in it."""
    return bool(_NAMES_CODE.search(spec))


def stored_spec(spec: Any, where: str, given: Iterable[str] = ()) -> str:
    """`spec` as read from a file, a database, a record or a request, where a spec is data: one that imports code
    (``py:``, at its start or nested in another spec) is `PlayerSpecError` of one line naming `where`, unless the
    very same spec is in `given`, the specs of today's command line. Every other kind names a bot or a saved
    policy, which is read as data (`policies.checkpoints`, `policies.files`)."""
    if not isinstance(spec, str) or not spec.strip():
        raise PlayerSpecError(f"{where}: {spec!r} is not a player spec")
    spec = spec.strip()
    if names_code(spec) and spec not in {s.strip() for s in given if isinstance(s, str)}:
        raise PlayerSpecError(f"{where}: '{spec}' is a {CODE_PREFIX} bot, which is code: a {CODE_PREFIX} spec is "
                              "taken only from a command line, never from a file, database, record or request")
    return spec


def make_player(spec: str, seed: int = 0, rules: Any = None,
                move_time_limit: float | None = DEFAULT_MOVE_TIME_LIMIT) -> Player:
    """The player a spec names (see the module docstring); `seed` feeds its own randomness. With `rules` (a
    `ludo_env.rules.Rules`), a learned player must have been trained for them (`check_fits`). `move_time_limit`:
    seconds a ``py:`` bot's ``choose`` may take per call (`PythonPlayer`; None: no limit)."""
    if not isinstance(spec, str) or not spec.strip():
        raise PlayerSpecError(f"player {spec!r} is not a spec: {allowed_specs()}")
    spec = spec.strip()
    if spec.startswith("py:"):
        player = _load_python_player(spec, seed)
        player.time_limit = move_time_limit
        return player
    if spec.startswith("ckpt:"):
        player = _load_checkpoint_player(spec)
    elif spec.startswith(CHAMPION_PREFIX):
        player = _load_champion(spec)
    elif spec.startswith(("search:", "mcts:")):
        player = _load_search_player(spec, seed)
    elif spec.startswith(ROLLOUT_PREFIX):
        player = _load_rollout_player(spec, seed)
    elif spec.startswith("exact:"):
        player = _load_exact_player(spec, seed)
    elif spec in bot_names():
        return BotPlayer(spec, seed)
    else:
        raise PlayerSpecError(f"unknown player '{spec}': {allowed_specs()}")
    if rules is not None:
        check_fits(player, rules)
    return player


def check_fits(player: Any, rules: Any) -> None:
    """`PlayerSpecError` (one line) if `player` was trained for another variant or player count than `rules`:
    a learned policy's inputs and seats mean what they meant in training. Players that record nothing (bots,
    your own) fit any game."""
    fits = getattr(player, "fits", None)
    if fits is not None:  # a player that knows which games it can play (`policies.exact`)
        try:
            fits(rules)
        except ValueError as err:
            raise PlayerSpecError(_one_line(err)) from None
    trained = getattr(player, "trained_for", None)
    if trained is None:
        return
    variant, players = trained
    if (players is not None and int(players) != rules.players) or (variant is not None and variant != rules.name):
        raise PlayerSpecError(
            f"player '{player.name}' was trained for {players}-player {variant}, this game is {rules.players}-player "
            f"{rules.name}: give a policy trained for {rules.players}-player {rules.name}"
        )


def trained_for(path: str | Path, module: Any = None) -> tuple[str | None, int | None] | None:
    """(variant name, player count) that the policy at `path` was trained for, from its ``policy.json``
    (``model_config.variant`` and ``players``) or the loaded `module`'s; None if it records neither."""
    from policies.checkpoints import PolicyFileError, find_policy, read_meta

    try:
        config = read_meta(find_policy(path)).get("model_config")
    except PolicyFileError:  # an RLlib module checkpoint: its model_config came with the module
        config = {"variant": getattr(module, "variant", None), "players": getattr(module, "players", None)}
    if not isinstance(config, dict):
        return None
    variant, players = config.get("variant"), config.get("players")
    if isinstance(variant, dict):
        variant = variant.get("name")
    if variant is None and players is None:
        return None
    return (None if variant is None else str(variant)), (None if players is None else int(players))


def check_choices(choices: Any, masks: np.ndarray, who: str) -> np.ndarray:
    """`choices` as int64 (B,) if it holds one legal token per game, else `PlayerError` naming `who`."""
    n = masks.shape[0]
    out = np.asarray(choices)
    if out.shape != (n,):
        raise PlayerError(f"{who} returned shape {out.shape} for {n} games: return one token index per game")
    if n == 0:
        return out.astype(np.int64)
    whole_floats = np.issubdtype(out.dtype, np.floating) and bool(np.all(out == np.round(out)))
    if not (np.issubdtype(out.dtype, np.integer) or whole_floats):
        raise PlayerError(f"{who} returned {out.dtype} values: return integer token indices 0..3")
    out = out.astype(np.int64)
    in_range = (out >= 0) & (out < masks.shape[1])
    legal = in_range.copy()
    legal[in_range] = masks[np.flatnonzero(in_range), out[in_range]] == 1
    if not legal.all():
        b = int(np.flatnonzero(~legal)[0])
        allowed = ", ".join(str(t) for t in np.flatnonzero(masks[b]))
        raise PlayerError(
            f"{who} chose token {int(out[b])} in game {b} of the batch, which is not legal there (legal: {allowed})"
        )
    return out


# ----------------------------------------------------------------- built-in bots
@functools.cache
def _bot_kernel():
    """The batched `choose` kernel, compiled on first use so that importing this module needs no bots."""
    from policies.bots.kernels import choose

    @kernel
    def choose_rows(bot, states, tab, masks, rng, streams, out):
        for i in range(states.shape[0]):
            out[i] = choose(bot, states[i], tab, masks[i], rng, streams[i])

    return choose_rows


class BotPlayer:
    """A built-in bot. `act` is `policies.bots.Bot.act`; `act_streams` draws from streams the caller owns."""

    thread_safe = True  # tournaments call act_streams: numba kernels over the caller's own streams

    def __init__(self, name: str, seed: int = 0) -> None:
        from policies.bots import Bot, bot_id

        self.name = name
        self.bot_id = int(bot_id(name))
        self._bot = Bot(name, seed=seed)

    def act(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return self._bot.act(states, tab, masks)

    def act_streams(
        self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray, rng: np.ndarray, streams: np.ndarray
    ) -> np.ndarray:
        """Choices for `states`, row i drawing its randomness from ``rng[streams[i]]`` (advanced in place)."""
        out = np.empty(states.shape[0], dtype=np.int64)
        _bot_kernel()(self.bot_id, states, tab, masks, rng, np.ascontiguousarray(streams, dtype=np.int64), out)
        return out

    def __repr__(self) -> str:
        return f"BotPlayer({self.name!r})"


class MoveTimeout(PlayerError):
    """A player took longer than its per-move time limit; one line naming the player and the limit."""


def call_with_time_limit(fn: Any, seconds: float | None, who: str) -> Any:
    """``fn()``, or `MoveTimeout` if it has not returned within `seconds` (None: no limit).

    The call runs in a daemon thread: Python cannot stop a thread, so a call that never returns is abandoned
    there and cannot keep the program from exiting. Whatever `fn` raises is raised here, unchanged.
    """
    if seconds is None:
        return fn()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as err:  # noqa: BLE001  handed to the caller, who decides what it means
            outcome["error"] = err

    worker = threading.Thread(target=run, name=f"move of {who}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise MoveTimeout(f"{who} took longer than {seconds:g} s to choose a move")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


# ------------------------------------------------------------ bring your own bot
class PythonPlayer:
    """Adapter from a user class with ``choose(view, die, mask)`` (mover's frame) to `Player`.

    Each call of ``choose`` may take at most `time_limit` seconds (None: no limit; `call_with_time_limit`), else
    `MoveTimeout` names the bot. What the bot prints goes to stderr, so a command's stdout (a results table) stays
    clean.
    """

    def __init__(self, spec: str, bot: Any, time_limit: float | None = DEFAULT_MOVE_TIME_LIMIT) -> None:
        self.name = spec
        self.bot = bot
        self.time_limit = time_limit
        self._who = f"{type(bot).__name__}.choose"

    def act(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
        view = mover_view_batch(states, tab)
        die = states[:, DIE].astype(np.int64)
        own_masks = masks.copy()  # a copy: the bot cannot edit the game's mask
        try:
            with contextlib.redirect_stdout(sys.stderr):
                choices = call_with_time_limit(lambda: self.bot.choose(view, die, own_masks), self.time_limit,
                                               f"{self._who} ({self.name})")
        except MoveTimeout:
            raise
        except KeyboardInterrupt:  # the person at the keyboard, not the bot: stop as Ctrl-C does
            raise
        except BaseException as err:  # the user's code, SystemExit included (a bot must not end the program)
            raise PlayerError(f"{self._who} raised {_raised(err)}") from err
        return check_choices(choices, masks, self._who)

    def __repr__(self) -> str:
        return f"PythonPlayer({self.name!r})"


def _load_python_player(spec: str, seed: int) -> PythonPlayer:
    target = spec[len("py:") :]
    module_name, sep, class_name = target.rpartition(":")
    if not sep or not module_name or not class_name:
        raise PlayerSpecError(f"player '{spec}' is not py:package.module:ClassName: {allowed_specs()}")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())  # `python launch/evaluate.py` puts launch/ first, not the user's folder
    try:
        with contextlib.redirect_stdout(sys.stderr):  # what a user's module prints is not a command's output
            module = importlib.import_module(module_name)
    except ImportError as err:
        raise PlayerSpecError(f"player '{spec}': cannot import module '{module_name}': {_one_line(err)}") from err
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # a module's own code, SystemExit included, must not end the program
        raise PlayerSpecError(
            f"player '{spec}': importing module '{module_name}' raised {type(err).__name__}: {_one_line(err)}"
        ) from err
    cls = getattr(module, class_name, None)
    if cls is None or not inspect.isclass(cls):
        raise PlayerSpecError(f"player '{spec}': module '{module_name}' has no class '{class_name}'")
    if not callable(getattr(cls, "choose", None)):
        raise PlayerSpecError(
            f"player '{spec}': class '{class_name}' has no method choose(view, die, mask) -> token per game"
        )
    try:
        takes_seed = "seed" in inspect.signature(cls).parameters
    except (TypeError, ValueError):
        takes_seed = False
    try:
        with contextlib.redirect_stdout(sys.stderr):
            bot = cls(seed=seed) if takes_seed else cls()
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # SystemExit too: the user's constructor must not end the program
        raise PlayerSpecError(f"player '{spec}': {class_name}() raised {_raised(err)}") from err
    return PythonPlayer(spec, bot)


# ---------------------------------------------------------------- checkpoints
class CheckpointPlayer:
    """A learned policy (`policies.modules.ModulePlayer`): encodes the states with its encoder, then asks it."""

    thread_safe = True  # a numba encoding and a forward pass in inference mode: no state between calls

    def __init__(self, spec: str, module: Any) -> None:
        self.name = spec
        self.module = module
        self.obs = getattr(module, "obs", None)
        self.trained_for = trained_for(spec[len("ckpt:"):], module)
        self._who = f"checkpoint '{spec[len('ckpt:'):]}'"  # its folder, also when it plays under another name

    def act(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if self.obs is None:
            # A module without an encoder (a bot wrapped as a module) reads the engine rows themselves.
            choices = self.module.act(np.zeros((states.shape[0], 0), np.float32), masks, states=states)
        else:
            from ludo_env.observations import encode

            # A decision with one legal token needs no network: a greedy policy can only play it. Only
            # the real choices are encoded and sent (the default PPO policy against 3 random: 20% of its
            # decisions are forced; a player that keeps one token out meets far more).
            choices = masks.argmax(axis=1).astype(np.int64)
            choosing = np.flatnonzero(masks.sum(axis=1) > 1)
            if choosing.size:
                choices[choosing] = self.module.act(encode(self.obs, states[choosing], tab), masks[choosing])
        return check_choices(choices, masks, self._who)

    def __repr__(self) -> str:
        return f"CheckpointPlayer({self.name!r})"


TRAINING_ONLY = {"torch", "ray", "gymnasium"}


def _load_checkpoint_player(spec: str) -> Player:
    path = spec[len("ckpt:") :]
    if not path:
        raise PlayerSpecError(f"player '{spec}' names no checkpoint: use ckpt:<path>")
    if not Path(path).exists():
        raise PlayerSpecError(f"player '{spec}': checkpoint '{path}' does not exist")
    try:
        from policies.checkpoints import PolicyFileError, find_policy  # torch: imported only for a checkpoint

        try:
            folder = find_policy(path)
        except PolicyFileError:
            folder = None  # maybe an RLlib single-module checkpoint, which policies.modules reads
        if folder is not None:
            from policies.saved import load_player

            player = load_player(folder, spec)
            if getattr(player, "trained_for", None) is None:  # a GA network or a TD(lambda) value
                player.trained_for = trained_for(path)
            return player
        from policies.modules import load_checkpoint_player
    except ValueError as err:  # PolicyFileError: a damaged folder or an unknown kind, one line
        raise PlayerSpecError(f"player '{spec}': {_one_line(err)}") from err
    except ModuleNotFoundError as err:
        missing = (err.name or "").split(".")[0]
        if err.name == "policies.modules" or missing in TRAINING_ONLY:
            raise PlayerSpecError(
                f"player '{spec}': checkpoints need torch and ray[rllib] (pip install -e .); "
                f"missing module '{err.name}'"
            ) from err
        raise
    try:
        module = load_checkpoint_player(path)
    except ValueError as err:  # not a module checkpoint: its message is already one line for the user
        raise PlayerSpecError(f"player '{spec}': {_one_line(err)}") from err
    return CheckpointPlayer(spec, module)


def _load_champion(spec: str) -> Player:
    """``champion:<variant>``: its shipped policy folder played as ``ckpt:`` plays it, named `spec`."""
    try:
        folder = champion_folder(spec)
    except ChampionError as err:
        raise PlayerSpecError(f"player '{spec}': {err}") from None
    player = _load_checkpoint_player(f"ckpt:{folder}")
    player.name = spec
    return player


def module_folder_player(folder: Path, meta: dict[str, Any], spec: str) -> CheckpointPlayer:
    """A PPO or DQN policy folder as a player named `spec` (its loader in `policies.saved.REGISTRY`)."""
    from policies.modules import ModulePlayer, load_policy

    return CheckpointPlayer(spec, ModulePlayer(load_policy(folder)))


def _load_search_player(spec: str, seed: int) -> Player:
    from policies.checkpoints import PolicyFileError

    try:
        if spec.startswith("search:"):
            from policies.search import make_search_player

            player = make_search_player(spec, seed)
        else:
            from policies.mcts import make_mcts_player

            player = make_mcts_player(spec, seed)
        player.trained_for = trained_for(spec.partition(":")[2].partition("?")[0])
        return player
    except ModuleNotFoundError as err:
        raise PlayerSpecError(f"player '{spec}': needs torch and ray[rllib] (pip install -e .); "
                              f"missing module '{err.name}'") from err
    except (PolicyFileError, ValueError) as err:
        raise PlayerSpecError(_named_by(spec, err)) from err


def _load_rollout_player(spec: str, seed: int) -> Player:
    try:
        return make_rollout_player(spec, seed, make_player)
    except ValueError as err:  # its own options, or its rollout policy's spec
        raise PlayerSpecError(_named_by(spec, err)) from err


def _load_exact_player(spec: str, seed: int) -> Player:
    from policies.exact import make_exact_player

    try:
        return make_exact_player(spec, seed, make_player)
    except ValueError as err:  # its own options, or its opponent's spec
        raise PlayerSpecError(_named_by(spec, err)) from err


def _named_by(spec: str, err: BaseException) -> str:
    """`err` in one line that starts with the spec it is about."""
    message = _one_line(err)
    return message if message.startswith(f"player '{spec}'") else f"player '{spec}': {message}"


def _raised(err: BaseException) -> str:
    """What a user's bot raised, in one line; a SystemExit says why it is refused."""
    if isinstance(err, SystemExit):
        return f"SystemExit({err.code!r}): a bot cannot end the program; return a token index per game"
    return f"{type(err).__name__}: {_one_line(err)}"


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text or type(err).__name__
