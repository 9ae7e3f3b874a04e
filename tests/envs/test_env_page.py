"""The env page of the docs (``docs/pages/how-to/use-the-env.md``) and the README's env snippet run as written.

Each ``python`` block is run on its own, as a reader pastes it into ``python``: a fresh interpreter in an empty
folder, importing the checkout's packages. A ``text`` block right after it is what the block prints, line for
line; a block with no ``text`` block after it must run without error. These blocks edit nothing, so unlike the
extension guides (`tests.guides`, which follow a guide in a copy of the tree) they run against the checkout itself
and load the kernels it has compiled.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "docs" / "pages" / "how-to" / "use-the-env.md", ROOT / "README.md")
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)


def python_blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """(line, code, printed or None) for each python block of `page`, with the text block that follows it."""
    text = page.read_text()
    blocks = [(m.group(1), m.group(2), m.start(), m.end()) for m in BLOCK.finditer(text)]
    found = []
    for i, (lang, body, start, end) in enumerate(blocks):
        if lang != "python":
            continue
        after = blocks[i + 1] if i + 1 < len(blocks) else None
        shown = after[1] if after and after[0] == "text" and not text[end:after[2]].strip() else None
        found.append((text.count("\n", 0, start) + 1, body, shown))
    return found


def test_the_pages_have_the_loops_to_run():
    page, readme = (python_blocks(p) for p in PAGES)
    codes = "\n".join(code for _, code, _ in page)
    assert len(page) >= 4 and all(loop in codes for loop in ("gym.make(", "gym.make_vec(", "LudoAEC()"))
    assert len(readme) == 1 and len(readme[0][1].strip().splitlines()) == 5, "the README shows five lines of the env"


@pytest.mark.parametrize("page,line,code,shown", [
    pytest.param(page, line, code, shown, id=f"{page.name}:{line}") for page in PAGES
    for line, code, shown in python_blocks(page)])
def test_each_block_runs_and_prints_what_the_page_shows(page, line, code, shown, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, f"{page.name}:{line} failed:\n{done.stderr[-3000:]}"
    if shown is not None:
        assert done.stdout.strip().splitlines() == shown.strip().splitlines(), f"{page.name}:{line} printed otherwise"
