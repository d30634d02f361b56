"""The README is the first screen a newcomer reads (issue 46): at most 150 lines, none past 120 characters outside
code blocks, the two set-up lines exact, every link resolving, and its printed excerpts what the code prints."""

from __future__ import annotations

import re
import textwrap

from bench.report.quality_answer import answer_lines
from tests.paths import REPO
from tests.report.test_quality_answer import DEMO

README = REPO / "README.md"
MAX_LINES = 150
MAX_WIDTH = 120
SETUP = (
    "python3.11 -m venv .venv && .venv/bin/pip install torch==2.13.0 -e . && .venv/bin/ragbench demo",
    "bash scripts/test.sh",
)


def _prose(lines: list[str]) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    found, fenced = [], False
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            found.append((number, line))
    return found


def test_the_readme_fits_a_few_screens_and_no_prose_line_is_too_wide():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES
    assert [n for n, line in _prose(lines) if len(line) > MAX_WIDTH] == []


def test_the_two_setup_lines_are_the_first_code_block():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block is not None and tuple(block.group(1).splitlines()) == SETUP


def test_every_relative_link_resolves():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)", text)
    assert targets
    missing = [t for t in targets if not t.startswith("http") and not (REPO / t).exists()]
    assert missing == []


def test_the_demos_answer_in_the_readme_is_what_the_code_prints_for_the_demos_figures():
    text = " ".join(README.read_text(encoding="utf-8").split())
    (line,) = answer_lines(DEMO)
    assert " ".join(textwrap.wrap(line)) in text


def test_the_pages_that_quote_the_demos_answer_quote_what_the_code_prints():
    (line,) = answer_lines(DEMO)
    for page in ("index.md", "quality.md"):
        text = " ".join((REPO / "docs" / page).read_text(encoding="utf-8").split())
        assert " ".join(textwrap.wrap(line)) in text, page
