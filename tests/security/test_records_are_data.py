"""Security 1: a record file in the records folder names a path. ``GET /api/records`` read the file a record's
variant named (any YAML the server could read) and sent its keys and values to any browser, and told whether a
path existed. A record is data: its variant is a name of conf/variant, or its rules come whole as a mapping."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from policies.records import RECORD_FORMAT
from tests.security.helpers import site_client

SECRET_KEY, SECRET_VALUE = "TOPSECRETKEY_abc", "SECRET-TOKEN-VALUE-9"


def record_line(variant, rules=None) -> str:
    """One well-formed record line (seat 0 to move, a six rolled) of `variant` and `rules`."""
    from ludo_env.engine.layout import CURRENT, DIE

    state = [0] * 26
    state[CURRENT], state[DIE] = 0, 6
    return json.dumps({"format": RECORD_FORMAT, "variant": variant, "players": 4, "rules": rules or {},
                       "game": "play:0:x", "player": "human", "seat": 0, "state": state, "die": 6,
                       "legal": [1, 0, 0, 0], "chosen": 0}) + "\n"


@pytest.fixture
def secrets_folder(tmp_path) -> Path:
    """Files a server can read that no browser may see: a YAML with a key and a value, one with a rule field."""
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "secret.yaml").write_text(f"{SECRET_KEY}: 1\n")
    (folder / "secret2.yaml").write_text(f"tokens: {SECRET_VALUE}\n")
    return folder


def listing(tmp_path: Path, line: str) -> str:
    records = tmp_path / "records"
    records.mkdir(exist_ok=True)
    (records / "crafted.jsonl").write_text(line)
    answer = site_client(records).get("/api/records")
    assert answer.status_code == 200
    [entry] = [e for e in answer.json()["records"] if e["file"] == "records/crafted.jsonl"]
    assert "error" in entry  # refused as data that names no variant
    return answer.text


def test_a_variant_that_climbs_out_of_conf_variant_is_not_read(tmp_path, secrets_folder):
    climb = "../" * 12 + str(secrets_folder / "secret").lstrip("/")  # conf/variant/<that>.yaml is the secret
    text = listing(tmp_path, record_line(climb))
    assert SECRET_KEY not in text and "unknown rule field" not in text


def test_a_variant_that_is_an_absolute_yaml_path_is_not_read(tmp_path, secrets_folder):
    text = listing(tmp_path, record_line(str(secrets_folder / "secret2.yaml")))
    assert SECRET_VALUE not in text and "is not allowed" not in text


def test_a_variant_naming_a_missing_path_answers_as_one_that_exists(tmp_path, secrets_folder):
    """No oracle: a path that exists and one that does not get the same answer, which names no file."""
    there = listing(tmp_path, record_line(str(secrets_folder / "secret.yaml")))
    missing = listing(tmp_path, record_line(str(secrets_folder / "nothing.yaml")))

    def error(text: str) -> str:
        [entry] = [e for e in json.loads(text)["records"] if e["file"] == "records/crafted.jsonl"]
        return entry["error"].replace("secret.yaml", "X").replace("nothing.yaml", "X")

    assert error(there) == error(missing) and "does not exist" not in missing


def test_rules_given_as_a_string_are_not_read_as_a_path(tmp_path, secrets_folder):
    """A record's rules are a mapping; a string holding "name" once passed as rules to load."""
    (secrets_folder / "name.yaml").write_text(f"{SECRET_KEY}: 1\n")
    text = listing(tmp_path, record_line("classic", rules=str(secrets_folder / "name.yaml")))
    assert SECRET_KEY not in text
