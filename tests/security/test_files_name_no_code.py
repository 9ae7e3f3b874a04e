"""Files name no code: a league member whose spec in ``league.db`` was ``py:<module>:<Class>`` was imported by
``league.py play``, and by the site once a browser chose that member. A ``py:`` spec is code: it comes only from
a command line. Each test puts a module on the path that writes a marker file when it is imported, and names it
where only data belongs."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from policies.league.store import LeagueStore
from policies.players import PlayerSpecError, stored_spec
from tests.security.helpers import QUICK, bot_league, one_error_line, run_command, site_client

MODULE = "marker_bot_for_tests"
SPEC = f"py:{MODULE}:Bot"
BOTS = "bots=random,fast,hybrid,aggressive"


@pytest.fixture
def marker_module(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """(the folder to put on the path, the marker file importing the module writes)."""
    folder = tmp_path / "modules"
    folder.mkdir()
    marker = tmp_path / "imported"
    (folder / f"{MODULE}.py").write_text(textwrap.dedent(f"""
        from pathlib import Path
        Path({str(marker)!r}).write_text("imported")

        class Bot:
            def choose(self, view, die, mask):
                return mask.argmax(axis=1)
        """))
    monkeypatch.syspath_prepend(str(folder))
    return folder, marker


def league_with_code_member(db: Path) -> Path:
    with LeagueStore.open(db) as store:
        store.add_member("sneaky", "external", SPEC)
    return db


def test_league_play_refuses_a_py_member_in_one_warning_and_the_others_play(tmp_path, marker_module):
    folder, marker = marker_module
    db = league_with_code_member(tmp_path / "league.db")
    done = run_command("launch/league.py", "play", f"league={db}", "games=40", BOTS,
                       env={"PYTHONPATH": f"{folder}:{Path(__file__).resolve().parents[2]}"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert not marker.exists(), "league.py play imported a module the database named"
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: sneaky")]
    assert len(warnings) == 1 and "is a py: bot, which is code" in warnings[0], done.stderr[-3000:]
    with LeagueStore.open(db, create=False, read_only=True) as store:
        assert len(store.matches()) == 40
        sneaky = store.member("sneaky").id
        assert all(sneaky not in match.seats for match in store.matches())


def test_league_add_refuses_a_py_bot_in_one_line(tmp_path):
    db = tmp_path / "league.db"
    done = run_command("launch/league.py", "add", "py:tests.evaluate.example_bot:FurthestBehind", f"league={db}")
    line = one_error_line(done)
    assert "a py: bot is code" in line and "league.external" in line, line
    assert not db.exists()


def test_the_site_neither_offers_nor_imports_a_py_member(tmp_path, marker_module):
    _, marker = marker_module
    run = bot_league(tmp_path / "run")
    league_with_code_member(run / "league.db")
    client = site_client(tmp_path / "records", run)
    offered = [o["id"] for o in client.get("/api/options").json()["opponents"]]
    assert "league:random" in offered and "league:sneaky" not in offered
    answer = client.post("/api/games", json={**QUICK, "opponents": ["league:sneaky"]})
    assert answer.status_code == 422 and SPEC not in answer.text, answer.text
    assert not marker.exists(), "the site imported a module the league database named"


@pytest.mark.parametrize("spec", [SPEC, f" {SPEC}", f"rollout:{SPEC}?n=4", f"exact:best_response?to={SPEC}"])
def test_a_stored_spec_that_names_code_is_refused(spec):
    with pytest.raises(PlayerSpecError, match="is a py: bot, which is code"):
        stored_spec(spec, "league member x")


def test_a_stored_spec_is_played_as_the_command_line_gave_it():
    assert stored_spec(SPEC, "league member x", given=[SPEC]) == SPEC
    for data in ("random", "ckpt:/runs/happy:py", "champion:quick", "search:/a/b?depth=2"):
        assert stored_spec(data, "league member x") == data


def test_a_resume_refuses_a_py_bot_its_run_folder_names_and_imports_nothing(tmp_path, marker_module):
    # a run folder is files, so data: its overrides.txt cannot bring a py: bot into a resumed run's league
    folder, marker = marker_module
    run = tmp_path / "run"
    run.mkdir()
    (run / "overrides.txt").write_text(f"+exp=smoke\nleague.external=[{SPEC}]\n")
    done = run_command("launch/train.py", f"resume={run}", timeout=180,
                       env={"PYTHONPATH": f"{folder}:{Path(__file__).resolve().parents[2]}"})
    line = one_error_line(done)
    assert "league.external from the run folder" in line and "is a py: bot, which is code" in line, line
    assert not marker.exists(), "a resume imported a module its run folder named"
