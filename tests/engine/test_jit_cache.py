"""The numba cache folder is named by a digest of every compiled source, so an edit can never load stale code."""
from __future__ import annotations

import shutil
from pathlib import Path

from ludo_env.engine import jit

ROOT = Path(__file__).resolve().parents[2]


def test_the_digest_covers_every_engine_and_bot_file_and_any_policies_file_with_numba():
    names = {p.relative_to(ROOT).as_posix() for p in jit._compiled_sources(ROOT)}
    assert {"ludo_env/engine/kernels.py", "ludo_env/engine/batch.py", "ludo_env/rules.py",
            "ludo_env/observations.py", "policies/bots/kernels.py", "policies/tournament.py"} <= names
    assert "policies/modules.py" not in names  # torch-only code does not invalidate the kernels


def test_editing_any_compiled_source_changes_the_cache_folder(tmp_path, monkeypatch):
    for package in ("ludo_env", "policies"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(jit, "__file__", str(tmp_path / "ludo_env" / "engine" / "jit.py"))
    before = jit.source_digest()
    assert jit.source_digest() == before
    constants = tmp_path / "ludo_env" / "engine" / "layout.py"  # constants the kernels freeze in
    constants.write_text(constants.read_text() + "\n# edited\n")
    assert jit.source_digest() != before


def test_the_cache_lives_in_the_digest_folder_and_can_be_switched_off():
    if jit.CACHE_DIR is not None:
        assert jit.CACHE_DIR.name == jit.source_digest()
