"""Follow a how-to guide literally: apply its code blocks to a copy of the tree, run its commands there, and
compare what they print with the output the guide shows.

A guide marks each block it means to be applied or run with an HTML comment on the line before the block's
fence (the convention is on the docs site: Run the tests, "Guides are tested"):

- ``<!-- guide: new PATH -->``: the block is a new file at ``PATH``;
- ``<!-- guide: append PATH -->``: the block goes at the end of ``PATH``;
- ``<!-- guide: insert PATH before: TEXT -->`` or ``... after: TEXT -->``: the block goes before or after the
  one line of ``PATH`` that contains ``TEXT``;
- ``<!-- guide: run -->``: the block is shell commands, run in the copy's root;
- ``<!-- guide: output -->``: the block is what the ``run`` block before it prints: its lines appear in that
  order in the printed text (others may come between), and ``...`` in a line stands for any text.

Blocks with no comment are read, not run. A marker this module does not know, a marker with no block after it,
an anchor that is not on exactly one line, or an ``output`` with no ``run`` before it is an error, so a guide
cannot drift from the code without its test failing.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDES = ROOT / "docs" / "pages" / "how-to"
MARKER = re.compile(r"<!--\s*guide:\s*(.*?)\s*-->")
STEP = re.compile(r"(?P<action>new|append|insert|run|output)(?:\s+(?P<path>[^\s:]+))?"
                  r"(?:\s+(?P<where>before|after):\s?(?P<anchor>.+))?")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
RUN_TIMEOUT_S = 600


class GuideError(AssertionError):
    pass


@dataclass(frozen=True)
class Step:
    action: str
    path: str | None
    where: str | None
    anchor: str | None
    text: str
    line: int
    """Line of the guide the marker is on (1-based), for messages."""


def steps(guide: Path) -> list[Step]:
    """The guide's marked blocks, in order."""
    lines = guide.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        marker = MARKER.search(lines[i])
        if not marker:
            i += 1
            continue
        step = STEP.fullmatch(marker.group(1))
        where = f"{guide.name}:{i + 1}"
        if not step:
            raise GuideError(f"{where}: unknown guide marker {marker.group(1)!r}")
        action, path = step["action"], step["path"]
        if (action in ("new", "append", "insert")) != (path is not None) or \
                (action == "insert") != (step["where"] is not None):
            raise GuideError(f"{where}: {marker.group(1)!r}: new/append PATH, "
                             "insert PATH before|after: TEXT, run or output")
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        fence = FENCE.match(lines[j]) if j < len(lines) else None
        if not fence:
            raise GuideError(f"{where}: the marker is not followed by a fenced block")
        indent, ticks = fence.groups()
        body, k = [], j + 1
        while k < len(lines) and not lines[k].strip().startswith(ticks):
            body.append(lines[k][len(indent):] if lines[k].startswith(indent) else lines[k].lstrip())
            k += 1
        found.append(Step(action, path, step["where"], step["anchor"], "\n".join(body) + "\n", i + 1))
        i = k + 1
    return found


def copy_tree(destination: Path) -> Path:
    """The files git knows of (tracked, and untracked ones it does not ignore), as they are now, at
    `destination`."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def guide_folder(guide: Path) -> Path:
    """Where `guide` is followed: the same folder every time for this checkout, so that numba, whose cache
    entries are named after a source's folder and checked against its size and time, loads what an earlier run
    of the same guide compiled instead of compiling it all again."""
    checkout = hashlib.sha256(str(ROOT).encode()).hexdigest()[:8]
    folder = Path(tempfile.gettempdir()) / f"ludo-league-guides-{os.getuid()}-{checkout}" / guide.stem
    if folder.exists():
        shutil.rmtree(folder)
    return folder


def edit(tree: Path, step: Step, guide: str) -> None:
    """Apply one edit step; the file then keeps its checkout time (see `guide_folder`), so its numba cache
    entries stay valid while the checkout and the guide stay the same."""
    where = f"{guide}:{step.line}"
    path = tree / step.path
    stamp = (ROOT / step.path).stat().st_mtime_ns if (ROOT / step.path).exists() else 0
    _edit(path, step, where)
    os.utime(path, ns=(stamp, stamp))


def _edit(path: Path, step: Step, where: str) -> None:
    if step.action == "new":
        if path.exists():
            raise GuideError(f"{where}: {step.path} exists already; the guide says to create it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(step.text)
        return
    if not path.is_file():
        raise GuideError(f"{where}: {step.path} is not a file of the tree")
    text = path.read_text()
    if step.action == "append":
        path.write_text(text.rstrip("\n") + "\n\n\n" + step.text)
        return
    lines = text.splitlines(keepends=True)
    hits = [n for n, line in enumerate(lines) if step.anchor in line]
    if len(hits) != 1:
        raise GuideError(f"{where}: {step.anchor!r} is on {len(hits)} lines of {step.path}, not one")
    at = hits[0] + (step.where == "after")
    path.write_text("".join(lines[:at]) + step.text + "".join(lines[at:]))


def run(tree: Path, script: str) -> subprocess.CompletedProcess:
    """`script` in bash at the root of `tree`, importing the tree's own packages, not the checkout's; what it
    prints on stdout and stderr, interleaved as a terminal shows them, is the result's ``stdout``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tree, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=RUN_TIMEOUT_S, check=False)


def shows(expected: str, printed: str) -> str | None:
    """None if every line of `expected` appears in `printed`, in order (``...`` matching any text, the ends of
    lines stripped); else the first line that does not."""
    lines = [line.strip() for line in printed.splitlines()]
    at = 0
    for want in filter(None, (w.strip() for w in expected.splitlines())):
        pattern = re.compile(".*".join(re.escape(part) for part in want.split("...")))
        while at < len(lines) and not pattern.fullmatch(lines[at]):
            at += 1
        if at == len(lines):
            return want
        at += 1
    return None


def follow(guide: Path, tree: Path) -> list[tuple[str, str]]:
    """Apply and run `guide` in `tree`, a copy of the checkout; returns (command, printed) of each run. Raises
    `GuideError` on a run that fails or prints other than the guide shows."""
    ran: list[tuple[str, str]] = []
    for step in steps(guide):
        where = f"{guide.name}:{step.line}"
        if step.action == "run":
            done = run(tree, step.text)
            printed = done.stdout
            ran.append((step.text, printed))
            if done.returncode != 0:
                raise GuideError(f"{where}: exit {done.returncode}:\n{step.text}\n{printed[-4000:]}")
        elif step.action == "output":
            if not ran:
                raise GuideError(f"{where}: an output block with no run block before it")
            missing = shows(step.text, ran[-1][1])
            if missing is not None:
                raise GuideError(f"{where}: the guide shows {missing!r}, which the run did not print:\n"
                                 f"{ran[-1][1][-4000:]}")
        else:
            edit(tree, step, guide.name)
    return ran
