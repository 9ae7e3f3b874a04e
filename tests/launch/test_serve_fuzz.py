"""launch/serve.py's HTTP API fuzzed from its own OpenAPI schema with schemathesis, in-process (ASGI, no socket):
no request it can make gets a 5xx, an undeclared status or content type, or a body that its schema does not allow.

The short run is in CI; `-m slow` runs the long one.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from launch.web.app import create_app
from launch.web.site import Site
from tests.launch.test_serve import play_out

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
SHORT = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
LONG = settings(max_examples=1_000, deadline=None, suppress_health_check=list(HealthCheck))


RECORDS = Path(tempfile.mkdtemp(prefix="ludo-league-fuzz-"))
(RECORDS / "human").mkdir()
APP = create_app(Site(RECORDS, []))
# Built at import, not from a fixture: schemathesis's fixture-based schemas rewrite pytest's private node ids,
# which pytest 9 no longer has. The site does not serve its schema, so it is read from the app itself.
api_schema = schemathesis.openapi.from_dict(APP.openapi())
api_schema.app = APP


@pytest.fixture(scope="module", autouse=True)
def finished_game():
    """A finished game on record, so that the record routes have something to read; the folder goes afterwards."""
    client = TestClient(APP)
    play_out(client, client.post("/api/games", json={"variant": "quick", "players": 2, "seat": 0,
                                                      "opponents": ["bot:random"]}).json())
    yield
    shutil.rmtree(RECORDS, ignore_errors=True)


@pytest.fixture(scope="module")
def live_game() -> str:
    """A game that the fuzzed game routes play on: rolls, moves and steps in any order, until it is over."""
    return TestClient(APP).post("/api/games", json={"variant": "quick", "players": 2, "seat": 0,
                                                    "opponents": ["bot:random"]}).json()["id"]


def operations(schema) -> list:
    """The schema's operations, one test each: plain pytest parameters, which pytest-xdist hands out like any
    other test (schemathesis's own parametrize made items that xdist ran one of per test function)."""
    return [result.ok() for result in schema.get_all_operations()]


ALL = operations(api_schema)
GAME = operations(api_schema.include(path_regex=r"^/api/games/\{game_id\}"))


def fuzz(operation, hypothesis_settings, live_game: str | None = None) -> None:
    """Every case hypothesis draws from `operation`'s schema, called in-process and checked against the schema;
    with `live_game`, a ``{game_id}`` in the path is that game."""
    @hypothesis_settings
    @given(case=operation.as_strategy())
    def one(case):
        if live_game is not None and "game_id" in (case.path_parameters or {}):
            case.path_parameters["game_id"] = live_game
        case.call_and_validate(checks=CHECKS)

    one()


@pytest.mark.parametrize("operation", ALL, ids=lambda operation: operation.label)
def test_the_api_answers_within_its_schema(operation):
    fuzz(operation, SHORT)


@pytest.mark.parametrize("operation", GAME, ids=lambda operation: operation.label)
def test_a_live_game_answers_within_its_schema(operation, live_game):
    fuzz(operation, SHORT, live_game)


@pytest.mark.slow
@pytest.mark.parametrize("operation", ALL, ids=lambda operation: operation.label)
def test_the_api_answers_within_its_schema_long(operation):
    fuzz(operation, LONG)


@pytest.mark.slow
@pytest.mark.parametrize("operation", GAME, ids=lambda operation: operation.label)
def test_a_live_game_answers_within_its_schema_long(operation, live_game):
    fuzz(operation, LONG, live_game)


def test_every_operation_of_the_app_is_fuzzed():
    """The parameters above are every operation the app publishes: a route added later is fuzzed without a
    change here, and none is lost on the way (an operation schemathesis could not read would be)."""
    published = {(method.upper(), path) for path, methods in APP.openapi()["paths"].items() for method in methods}
    assert len(published) >= 10
    assert {(operation.method.upper(), operation.path) for operation in ALL} == published
    assert GAME and all(operation.path.startswith("/api/games/{game_id}") for operation in GAME)
