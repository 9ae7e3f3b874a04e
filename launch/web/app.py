"""The FastAPI app behind `launch/serve.py`: games against agents, records, replays and the league page.

The server owns everything that runs: the browser names an opponent by an id
from `Site.opponents` (a seed bot, an agent given on the command line, a league
member) and never sends a player spec, a path or code. Each game is an
engine-checked `ludo_env.engine.Game` on the server, behind its own lock, so
several browsers play at once without touching each other. The person rolls
and moves with ``POST /api/games/<id>/roll`` and ``/move``; the page asks for
the opponents' turns one at a time with ``/step``, at the speed the person
sets. A finished game's decisions, the person's and the agents', with their
dice, are written in the `policies.records` format to ``<records>/<game>.jsonl``
(the person's alone also to ``<records>/human/<game>.jsonl``), each file
written beside its place and renamed into it, so a file is whole or absent.
An unfinished game is kept in ``<records>/games.db`` (`launch.web.saved`) after each roll, move or opponent
turn, and is restored, its events replayed from the seed, when a server starts on that folder; the browser's
player token lists its own (``GET /api/saved``). Every view carries a ``version``, the game's count of events,
which a tab polls (``GET /api/games/<id>/version``) to follow a game played in another. With a league, a
finished game of a named person against league members only is rated there (`Site.rate`).

Every refusal is a 4xx with one line of JSON, ``{"error": "..."}``; so is a
malformed or unknown request, a method a path does not take (405, with the
``Allow`` header naming those it takes) and a request that is not valid HTTP,
which the HTTP server itself refuses (`one_line_h11_protocol`). Nothing answers
with a traceback. Answers are gzip-compressed for a browser that accepts it
(plotly.js, the league page's 4.8 MB library, compressed once and kept).

The browser is not trusted: it names things only by ids from the lists the
server publishes (variants, opponents, games, record files), each looked up in
that list before anything is loaded; an error text repeats at most a short,
escaped prefix of what was sent; a body is at most `MAX_BODY_BYTES`. An agent
that raises, answers a token that cannot move or runs past the move time
limit loses its seat to the random bot for the rest of that game, and the
game's view says so: one bad agent cannot stop a game, nor hold up others.
"""
from __future__ import annotations

import json
import traceback
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.gzip import GZipMiddleware

from launch.web import games, league, records
from launch.web.common import MAX_BODY_BYTES, MAX_ERROR_CHARS, SHOWN_CHARS, STATIC, Refused, log, shown
from launch.web.site import Site

HTTP_METHODS = {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}


class OneLineJSON(JSONResponse):
    """JSON in ASCII: a lone surrogate or any other odd character a client sent cannot fail the encoding."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def one_line_error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return OneLineJSON({"error": one_line_text(message)}, status_code=status, headers=headers)


def one_line_text(message: str) -> str:
    text = " ".join(str(message).split())
    return text[:MAX_ERROR_CHARS] + "..." if len(text) > MAX_ERROR_CHARS else text


def one_line_h11_protocol():
    """uvicorn's h11 protocol, but a request that is not valid HTTP (a Content-Length that is not a number, a
    broken header) is answered as the site answers every refusal, 400 with one line of JSON, not uvicorn's
    text/plain; `launch/serve.py` serves with it (``uvicorn.Config(http=...)``)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class OneLineH11Protocol(H11Protocol):
        def send_400_response(self, msg: str) -> None:
            body = json.dumps({"error": one_line_text(f"the request is not valid HTTP ({msg.rstrip('.')}): check "
                                                      "its request line and headers, Content-Length included")},
                              ensure_ascii=True).encode("ascii")
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                       (b"connection", b"close")]
            for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                          h11.Data(data=body), h11.EndOfMessage()):
                self.transport.write(self.conn.send(event))
            self.transport.close()

    return OneLineH11Protocol


class BodyLimit:
    """ASGI middleware: a request body over `limit` bytes is a 413 with one line of JSON, told by its
    Content-Length before anything is read, or, sent without one, as soon as the bytes received pass the limit."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or ()).get(b"content-length", b"")
        if length and (not length.isdigit() or int(length) > self.limit):
            response = one_line_error(413 if length.isdigit() else 400,
                                      f"the request body is over {self.limit} bytes" if length.isdigit()
                                      else "the Content-Length header is not a number")
            return await response(scope, receive, send)
        received = 0

        async def limited():
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:  # FastAPI passes an HTTPException from reading the body to its handler
                raise StarletteHTTPException(413)
            return message

        return await self.app(scope, limited, send)


def allowed_methods(app: FastAPI, path: str) -> str:
    """The methods the routes matching `path` take, for a 405's ``Allow`` (``GET, HEAD`` for a static file)."""
    from starlette.routing import Match

    methods: set[str] = set()
    scope = {"type": "http", "path": path, "method": "GET", "root_path": ""}
    for route in app.router.routes:
        match, _ = route.matches(scope)
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or {"GET", "HEAD"})
    return ", ".join(sorted(methods)) or "GET"


def create_app(site: Site) -> FastAPI:
    # The schema is not served (the site has no API docs to show); tests take it from app.openapi().
    app = FastAPI(title="ludo-league", docs_url=None, redoc_url=None, openapi_url=None,
                  default_response_class=OneLineJSON)
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    app.add_middleware(GZipMiddleware, minimum_size=1000)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(Refused)
    async def refused(_: Request, err: Refused):
        return one_line_error(err.status, str(err))

    @app.exception_handler(RequestValidationError)
    async def malformed(_: Request, err: RequestValidationError):
        problems = []
        for e in err.errors()[:5]:
            # a location can be a key the client made up: shown cut short, like any other value it sent
            where_ = ".".join(p if isinstance(p, str) and p.isidentifier() and len(p) <= SHOWN_CHARS else shown(p)
                              for p in e.get("loc", ()) if p != "body") or "body"
            problems.append(f"{where_}: {e.get('msg', 'invalid')}")
        return one_line_error(422, "malformed request: " + "; ".join(problems))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException):
        if err.status_code == 404:
            return one_line_error(404, f"no such page: {shown(request.url.path)}")
        if err.status_code == 405:
            method = request.method if request.method in HTTP_METHODS else shown(request.method, 10)
            allow = (err.headers or {}).get("Allow") or allowed_methods(app, request.url.path)
            return one_line_error(405, f"{method} is not allowed on {shown(request.url.path)}: use {allow}",
                                  headers={"Allow": allow})
        if err.status_code == 413:
            return one_line_error(413, f"the request body is over {MAX_BODY_BYTES} bytes")
        return one_line_error(err.status_code, str(err.detail))

    @app.exception_handler(Exception)
    async def crashed(request: Request, err: Exception):
        # The frames, not the message: a message can hold what the client sent, whole.
        log.error("%s %s failed (%s):\n%s", request.method, shown(request.url.path), type(err).__name__,
                  "".join(traceback.format_tb(err.__traceback__)).rstrip())
        return one_line_error(500, f"the server failed on this request ({type(err).__name__}); see its log")

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def play_page():
        return FileResponse(STATIC / "play.html", headers={"Cache-Control": "no-store"})

    for part in (games, records, league):  # in this order, the schema lists the game API before the records'
        app.include_router(part.routes(site))
    return app
