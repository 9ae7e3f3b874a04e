"""What every part of the site shares: its refusals (`Refused`, the `Error` answer each route declares), how a
client's value or an exception is shown on one line, and the server's log."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel

STATIC = Path(__file__).resolve().parent / "static"
MAX_BODY_BYTES = 16 * 1024  # a new game's body is under 200 bytes
SHOWN_CHARS = 40  # of a client's value in an error text
MAX_ERROR_CHARS = 300
log = logging.getLogger("launch.serve")


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """A client's value for an error text: a short prefix, quoted and escaped to ASCII, so that neither a huge
    input nor a lone surrogate comes back (or into the log) whole."""
    if isinstance(value, str):
        return ascii(value[:limit]) + ("..." if len(value) > limit else "")
    text = ascii(value)  # a number or a JSON list: bounded by MAX_BODY_BYTES
    return text[:limit] + ("..." if len(text) > limit else "")


def one_line(err: BaseException, limit: int = 200) -> str:
    """An exception on one short line, for a game's notice and the log; a `PlayerError` already names what
    raised, anything else is prefixed with its type."""
    from policies.players import PlayerError

    text = " ".join(str(err).split())
    if not isinstance(err, PlayerError):
        text = f"{type(err).__name__}: {text}" if text else type(err).__name__
    return text[:limit] + ("..." if len(text) > limit else "")


class Refused(Exception):
    """A request the server will not carry out; `status` and one line saying why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class Error(BaseModel):
    """Every refusal: one line saying what is wrong and what is allowed."""
    error: str


WHY = {400: "The body is not JSON that can be read", 404: "No such game, record file or game in it",
       409: "Not allowed now: not your turn, a token that cannot move, the game is over",
       403: "A claimed name without the secret of the browser that claimed it",
       413: f"The body is over {MAX_BODY_BYTES} bytes", 422: "A malformed request, or a value not on the offered lists",
       429: "Past a cap: unfinished games of a browser, an address or the server, or new names in an hour",
       503: "The league cannot be read or written now"}


def refusals(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The error answers a route declares, so that its OpenAPI schema names every status it gives."""
    return {code: {"model": Error, "description": WHY[code]} for code in codes}

