"""Each how-to guide that extends the project, followed literally in a copy of the tree: its code blocks
applied where it says, its commands run, and what they print compared with the output it shows
(`tests.guides`; the convention is in ``docs/pages/how-to/test.md``). A guide that drifts from the code fails
here.

Each guide runs in a copy of its own, so the checkout is never edited. The kernels compile once in the copy
(numba's cache is keyed by the sources, ``ludo_env.engine.jit``, and by their folder, which
`tests.guides.guide_folder` keeps the same), so a later run of an unchanged guide on an unchanged checkout
loads them.
"""
from __future__ import annotations

import shutil

import pytest

from tests.guides import GUIDES, GuideError, copy_tree, edit, follow, guide_folder, shows, steps

GUIDE_PAGES = ("add-bot.md", "add-encoder.md", "add-algorithm.md", "add-league-role.md")


@pytest.mark.parametrize("page", GUIDE_PAGES)
def test_the_guide_runs_as_written_and_prints_what_it_shows(page):
    guide = GUIDES / page
    kinds = [step.action for step in steps(guide)]
    assert "run" in kinds and "output" in kinds, f"{page} runs nothing or shows no output"
    assert kinds.index("output") > kinds.index("run")
    folder = guide_folder(guide)
    follow(guide, copy_tree(folder))
    shutil.rmtree(folder)  # kept when the guide fails, to look at


def test_a_marker_without_a_block_or_of_an_unknown_kind_is_an_error(tmp_path):
    guide = tmp_path / "guide.md"
    guide.write_text("<!-- guide: replace x.py -->\n```python\npass\n```\n")
    with pytest.raises(GuideError, match="unknown guide marker 'replace x.py'"):
        steps(guide)
    guide.write_text("<!-- guide: new x.py -->\n\nText, not a block.\n")
    with pytest.raises(GuideError, match="not followed by a fenced block"):
        steps(guide)


def test_an_anchor_must_be_on_exactly_one_line(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\ny = 2\nx = 3\n")
    guide = tmp_path / "guide.md"
    guide.write_text("<!-- guide: insert a.py after: y = 2 -->\n```python\nz = 0\n```\n"
                     "<!-- guide: insert a.py before: x = -->\n```python\nw = 0\n```\n")
    first, second = steps(guide)
    edit(tmp_path, first, "guide.md")
    assert (tmp_path / "a.py").read_text() == "x = 1\ny = 2\nz = 0\nx = 3\n"
    with pytest.raises(GuideError, match="'x =' is on 2 lines of a.py, not one"):
        edit(tmp_path, second, "guide.md")


def test_shown_output_matches_lines_in_order_with_ellipses():
    printed = "compiling...\n5 passed, 43 deselected in 9.1s\nrandom   3   600\n"
    assert shows("5 passed, ... deselected in ...\nrandom   3   600", printed) is None
    assert shows("random   3   600\n5 passed, ...", printed) == "5 passed, ..."  # out of order
    assert shows("6 passed, ...", printed) == "6 passed, ..."
