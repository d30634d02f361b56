"""The README's CI-gate excerpt is what the commands print (issue 46: examples that cannot rot): a baseline run of
bm25 on builtin:numpy-docs, a pull request's run with its stemmer off, and `compare` failing it on nDCG@10."""

from __future__ import annotations

import pytest

from tests.harness.cli import run_cli_process
from tests.paths import REPO


def _excerpt(first_word: str) -> list[str]:
    """The README's text block that starts with `first_word`, its wrapped lines joined back."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split(f"```text\n{first_word}", 1)[1].split("```", 1)[0]
    lines: list[str] = []
    for line in (first_word + block).splitlines():
        if line.startswith("  ") and lines:
            lines[-1] += " " + line.strip()  # a line the README wrapped at 120 characters
        else:
            lines.append(line)
    return lines


@pytest.mark.slow  # two quality runs over 688 queries and a gate: seconds by design
def test_the_ci_gate_excerpt_is_what_compare_prints(cache_dir, tmp_path):
    # Each command in a process of its own, as a user runs them: builtin:numpy-docs is built from the docstrings of
    # the process that first needs it, and one the test session imported scipy into reads numpy.sinc extended.
    for out, target in (("base", "bm25"), ("pr", "bm25=bm25?stemmer=none")):
        args = ["quality", "--dataset", "builtin:numpy-docs", "-t", target, "--out", str(tmp_path / out)]
        done = run_cli_process(args, env={"RAGBENCH_CACHE": str(cache_dir)})
        assert done.returncode == 0, done.stderr
    args = ["compare", str(tmp_path / "base"), str(tmp_path / "pr"), "--max-drop", "nDCG@10=0.01"]
    # a CI job's step summary is not this test's to write into
    done = run_cli_process(args, env={"RAGBENCH_CACHE": str(cache_dir), "GITHUB_STEP_SUMMARY": str(tmp_path / "s.md")})
    printed = done.stdout.splitlines()
    shown = _excerpt("ragbench compare:")
    assert done.returncode == 1 and printed[0] == shown[0]
    fail = next(line for line in printed if line.startswith("FAIL"))
    assert shown[1] == fail[: len(shown[1])] and len(shown[1]) > 100  # the README shows the line's start
