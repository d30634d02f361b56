"""Examples that cannot rot (issue 46): the README's and the docs pages' marked examples, read, run and compared.

The convention (docs/testing.md, "Runnable examples"): an HTML comment before a fenced block marks it.

    <!-- runnable: NAME -->      before a ```bash block: its `ragbench ...` lines are run, in order; its other lines
                                 start the tests' fixture servers (`.venv/bin/python tests/... &`), wait until
                                 they serve (`until curl -sf URL ...; done`) and stop them (`kill %1`): the test
                                 starts its own fixtures and puts their URLs in place of the page's
    <!-- printed: NAME -->       before a ```text block: an excerpt of what those commands printed

One NAME may be marked on several pages (the README and its journey's page): its commands must be the same
everywhere, they run once, and every excerpt is compared with what they printed. An excerpt matches when its words,
read in order, are in the output: line breaks and runs of spaces are one space (a page wraps at 120 characters, the
console where it likes), every number stands for any number (timings and figures vary from run to run), and `...`
stands for whatever the page left out. Each excerpt line that starts at the left margin must start a printed line.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from tests.paths import REPO

MARK = re.compile(r"<!-- (runnable|printed): ([\w.-]+) -->\n```(\w*)\n(.*?)```", re.S)
FENCE_OF = {"runnable": "bash", "printed": "text"}
NUMBER = re.compile(r"[+\-−]?\d(?:[\d,]*\d)?(?:\.\d+)?(?:e[+\-]\d+)?")
ELISION = re.compile(r"\.\.\.|…")
# A runnable block's other lines: a fixture server started in the background, a wait for it, stopping it.
SHELL_LINE = re.compile(
    r"^(\.venv/bin/python tests/[\w/]+\.py( [^&]*)? &"
    r"|until curl -sf http://127\.0\.0\.1:\d+/\w+ >/dev/null; do sleep 1; done"
    r"|kill( %\d)+)$"
)


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository: README.md, docs/sizing.md
    kind: str  # runnable | printed
    name: str
    fence: str  # the fenced block's language
    body: str


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks(paths: list[Path] | None = None) -> list[Block]:
    """Every marked block of the README and the docs pages."""
    found = []
    for path in paths or pages():
        for kind, name, fence, body in MARK.findall(path.read_text(encoding="utf-8")):
            found.append(Block(str(path.relative_to(REPO)), kind, name, fence, body))
    return found


def lines_of(body: str) -> list[str]:
    """A shell block's logical lines: `\\`-continued lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    return [" ".join(shlex.split(line, comments=True)) for line in joined.splitlines() if shlex.split(line, True)]


def commands(body: str) -> list[list[str]]:
    """The arguments of each `ragbench` line of a runnable block (what follows `ragbench`)."""
    return [shlex.split(line)[1:] for line in lines_of(body) if line.startswith("ragbench ")]


def odd_lines(body: str) -> list[str]:
    """Lines of a runnable block that are neither `ragbench ...` nor a fixture server started in the background."""
    return [line for line in lines_of(body) if not line.startswith("ragbench ") and not SHELL_LINE.match(line)]


def normal(text: str) -> str:
    return " ".join(NUMBER.sub("#", text).split())


def missing_parts(excerpt: str, printed: str) -> list[str]:
    """The parts of `excerpt` (split at its `...`) not found in `printed` in order, read as the module says."""
    out, at, missing = normal(printed), 0, []
    for part in ELISION.split(excerpt):
        wanted = normal(part)
        if not wanted:
            continue
        found = out.find(wanted, at)
        if found < 0:
            missing.append(part.strip())
        else:
            at = found + len(wanted)
    return missing


def unstarted_lines(excerpt: str, printed: str) -> list[str]:
    """Excerpt lines at the left margin whose text (up to a `...`) starts no printed line."""
    starts = [normal(printed[m.start() :]) for m in re.finditer(r"^\S", printed, re.M)]
    bad = []
    for line in excerpt.splitlines():
        head = normal(ELISION.split(line)[0])
        if line[:1].strip() and head and not any(start.startswith(head) for start in starts):
            bad.append(line)
    return bad
