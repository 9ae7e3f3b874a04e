"""The documentation builds strictly, and the README is the landing page it is meant to be.

``mkdocs build --strict`` (``docs/mkdocs.yml``) fails on a broken link, a missing page or anchor, a page left out
of the nav, a docstring mkdocstrings cannot render, or anything the reference generator (``docs/hooks/reference.py``)
cannot describe. The build needs the ``docs`` extra (MkDocs, Material, mkdocstrings); without it that test skips
and says so. The README's own checks need nothing.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_README_LINES = 120
SETUP = """\
# 1. Install and run the main job
pip install -c requirements.lock -e . && python launch/train.py +exp=dqn_selfplay
# 2. Install and run the tests (what CI runs: .ci/run)
pip install -c requirements.lock -e ".[test]" && python -m pytest -m "not slow" -n 2 --dist loadfile
"""
DOCS_PACKAGES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")


def missing_docs_packages() -> list[str]:
    return [name for name in DOCS_PACKAGES if importlib.util.find_spec(name.split(".")[0]) is None
            or (("." in name) and importlib.util.find_spec(name) is None)]


def test_the_site_builds_strictly(tmp_path):
    missing = missing_docs_packages()
    if missing:
        pytest.skip(f"the docs extra is not installed ({', '.join(missing)} missing): pip install -e \".[docs]\"")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "docs" / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False)
    problems = [line for line in (done.stdout + done.stderr).splitlines() if "WARNING" in line or "ERROR" in line]
    assert done.returncode == 0, "mkdocs build --strict failed:\n" + "\n".join(problems or [done.stderr[-3000:]])
    site = tmp_path / "site"
    for page in ("index.html", "reference/commands/train/index.html", "reference/benchmarks/index.html",
                 "reference/api/engine/index.html", "results/index.html", "changelog/index.html"):
        assert (site / page).is_file(), page
    train = (site / "reference/commands/train/index.html").read_text()
    assert "algo.advantage_learning" in train and "league=alphastar" in train  # generated from the schema and conf/
    assert "ludo_env.rules.Rules" in (site / "reference/api/engine/index.html").read_text()  # from the docstrings


def readme() -> str:
    return README.read_text()


def test_the_readme_is_a_landing_page_of_at_most_120_lines():
    lines = readme().splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; at most {MAX_README_LINES}"


def test_the_readme_gives_the_two_setup_commands_the_platform_and_why_a_lock_file():
    text = readme()
    assert SETUP in text
    assert "Python 3.11" in text and "Linux x86-64" in text
    assert "uv pip compile" in text and "constraints" in text


def test_the_readme_says_what_the_seed_documents_are_where_it_first_names_them():
    text = readme().lower()
    first = text.index("seed documents")
    assert "seed 000" in text[first:first + 200], "the README names the seed documents before saying what they are"


def test_the_readme_shows_a_first_command_the_env_and_a_results_headline():
    text = readme()
    assert "python launch/play.py opponents='[champion:" in text and "+exp=smoke" in text
    assert 'gym.make("ludo_env/Ludo-v0")' in text  # the snippet itself runs in tests/envs/test_env_page.py
    assert "docs/pages/results/" in text and "%" in text.split("## Results", 1)[1].split("##", 1)[0]


def test_the_readme_says_what_the_seeds_are():
    text = readme()
    assert all(f"seed 00{i}" in text.lower() for i in range(5))
    assert "docs/pages/concepts/seeds.md" in text


def test_every_relative_link_of_the_readme_points_at_a_file():
    links = re.findall(r"\]\(([^)\s]+)\)", readme())
    relative = [link for link in links if not re.match(r"[a-z]+:", link) and not link.startswith("#")]
    assert relative, "the README links into the docs"
    for link in relative:
        target = link.split("#", 1)[0]
        assert (ROOT / target).exists(), f"README.md links to {link}, which does not exist"


def test_simple_tables_in_docstrings_become_markdown_tables():
    """The API pages' griffe extension (docs/hooks/rst_tables.py) turns a reStructuredText simple table, header or
    not, continuation rows included, into a Markdown table, and leaves other text as it is."""
    pytest.importorskip("griffe", reason="the extension is a griffe extension (the docs extra)")
    spec = importlib.util.spec_from_file_location("docs_rst_tables", ROOT / "docs" / "hooks" / "rst_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = "\n".join(["Intro.", "", "=====  =====", "name   what", "=====  =====", "a      one", "       more",
                      "b      two", "=====  =====", "", "After."])
    assert module.convert(text).split("\n") == ["Intro.", "", "", "| name | what |", "| --- | --- |",
                                                 "| a | one more |", "| b | two |", "", "", "After."]
    bare = "\n".join(["====  ====", "x     1", "y     2", "====  ===="])
    assert "| x | 1 |" in module.convert(bare) and "|  |  |" in module.convert(bare)
    assert module.convert("no table here\n====\n") == "no table here\n====\n"
