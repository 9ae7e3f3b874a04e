"""The commands' reference pages show what each key allows from the declarations the commands check, and the
generator (``docs/hooks/reference.py``) stops the build on a checked key that shows nothing allowed or a key with
no description."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def reference():
    pytest.importorskip("griffe", reason="the generator reads docstrings with griffe (the docs extra)")
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def rows(page: str) -> dict[str, list[str]]:
    """Key -> the cells of its row, from a page's key tables (key, type, default, allowed, what it is)."""
    found = {}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if line.startswith("| `") and len(cells) == 5:
            found[cells[0].strip("`")] = cells
    return found


def page_of(reference, script: str) -> str:
    return reference.command_page(next(c for c in reference.COMMANDS if c.script == script))


def test_the_evaluate_page_shows_the_ranges_evaluate_checks(reference):
    from launch.evaluate import EvaluateConfig

    table = rows(page_of(reference, "launch/evaluate.py"))
    assert table["threads"][3] == "a number in [0, 256]" == EvaluateConfig.RANGES["threads"].text()
    assert table["games"][3] == "a number in [1, 10000000]"
    assert table["move_time_limit"][3] == "a number > 0 or null"
    assert table["path"][3] == "`auto`, `fast`, `generic`"
    assert "len(players) - 1" in table["record_player"][3]


def test_the_train_page_shows_the_ranges_the_schema_checks(reference):
    table = rows(page_of(reference, "launch/train.py"))
    assert table["league.pfsp_rounds"][3] == "a number >= 1"
    assert table["league.max_snapshots"][3] == "a number in [0, 256]"
    assert table["sampler.name"][3] == "`batched`, `per_game`"
    assert table["wandb.mode"][3] == "`offline`, `online`, `disabled`"
    assert table["checkpoint.keep"][3] == "a number >= 1"
    assert table["resources.gpus_per_learner"][3] == "auto or a number in [0, 64]"
    assert table["max_plies"][3].startswith("a number in [1, ")


def test_a_checked_key_that_shows_nothing_allowed_stops_the_build(reference):
    page = "\n".join(["| key | type | default | allowed | what it is |", "| --- | --- | --- | --- | --- |",
                      "| `threads` | `int` | `0` |  | Threads. |"])
    reference.check_allowed_shown(page, {"games"}, "launch/x.py")  # a key no check names may show nothing
    with pytest.raises(reference.ReferenceError, match="checks key threads"):
        reference.check_allowed_shown(page, {"threads"}, "launch/x.py")
    undescribed = page.replace("Threads.", "")
    with pytest.raises(reference.ReferenceError, match="key threads has no description"):
        reference.check_allowed_shown(undescribed, set(), "launch/x.py")


def test_hand_written_checks_are_found_in_the_source(reference):
    checked = reference.checked_keys("launch.training.schema", "launch.wait_for_nodes", "launch.play")
    assert {"resources.gpus_per_learner", "timeout", "delay"} <= checked


def test_a_restructuredtext_literal_block_in_a_docstring_stops_the_build(reference, tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text('"""Example::\n\n    x = 1\n"""\n')
    monkeypatch.setattr(reference, "ROOT", tmp_path)
    monkeypatch.setattr(reference, "all_modules", lambda: ["pkg.mod"])
    with pytest.raises(reference.ReferenceError, match=r"pkg/mod.py:1: a reStructuredText literal block"):
        reference.check_markdown_docstrings()
    (tmp_path / "pkg" / "mod.py").write_text('"""Example:\n\n```python\nx = 1\n```\n"""\n')
    reference.check_markdown_docstrings()
