"""The README's and the docs pages' runnable examples are what the commands print (issue 46: examples that cannot
rot; the convention is tests/docs/examples.py's, documented in docs/testing.md). Each example runs once, its
commands each in a process of their own as a user runs them, against the fixture servers the other tests use."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.examples import FENCE_OF, blocks, commands, missing_parts, odd_lines, unstarted_lines
from tests.harness.cli import run_cli_process
from tests.harness.process import stop_process

# Every marked example and the test that runs it: a marker without a test, or a test without its marker, fails.
EXAMPLES = {
    "size-queue": "test_the_sizing_example",
    "quality-served": "test_the_quality_example",
    "ci-gate": "test_the_ci_gate_example",
    "ci-interleave": "test_the_interleave_example",
}
# A command stuck past this is a hang, not a slow runner: the slowest example, quality through the TEI stand-ins
# (MiniLM encodes 80 texts, the stand-in reranks 100 pairs), took 600 s at load average 25 on 2 cores and about
# 5 min beside the fixtures' start; on a runner at load 3-5 a few minutes in all.
HANG_S = 1200


def test_every_marked_example_is_well_formed_and_run_by_a_test():
    found = blocks()
    assert {b.name for b in found} == set(EXAMPLES)
    for block in found:
        assert block.fence == FENCE_OF[block.kind], block
        assert EXAMPLES[block.name] in globals(), block
    for name in EXAMPLES:
        mine = [b for b in found if b.name == name]
        runnable = [b for b in mine if b.kind == "runnable"]
        assert runnable and any(b.kind == "printed" for b in mine), f"{name}: a runnable block and an excerpt"
        assert len({tuple(map(tuple, commands(b.body))) for b in runnable}) == 1, f"{name}: commands differ"
        assert all(commands(b.body) and not odd_lines(b.body) for b in runnable), name


def test_an_excerpt_is_read_by_its_words_with_numbers_and_elisions_free():
    printed = "verdict: FAIL (1 of 2 checks)\n  p95 54.4 ms from 332\n  requests, errors 0.00%\nreport: r.html\n"
    assert missing_parts("verdict: FAIL (3 of 4 checks)\n  p95 61 ms ... errors 1.5%", printed) == []
    assert unstarted_lines("verdict: FAIL ...\nreport: r.html", printed) == []
    assert missing_parts("verdict: PASS ...", printed) == ["verdict: PASS"]  # words are words
    assert missing_parts("report: r.html ... p95", printed) == ["p95"]  # in the order printed
    assert unstarted_lines("p95 54.4 ms ...", printed) == ["p95 54.4 ms ..."]  # a line starts a line


def run_example(name: str, urls: dict[str, str], cwd: Path, exits: tuple[int, ...] = ()) -> None:
    """Run example `name`'s commands in `cwd` with the page's URLs replaced by the fixtures' (`urls`), each exiting as
    `exits` says (0 where it says nothing), and compare every excerpt of it with what they printed."""
    found = [b for b in blocks() if b.name == name]
    runnable = next(b for b in found if b.kind == "runnable")
    printed = ""
    for index, args in enumerate(commands(runnable.body)):
        for page_url, url in urls.items():
            args = [arg.replace(page_url, url) for arg in args]
        # a CI job's step summary is not this test's to write into
        done = run_cli_process(args, env={"GITHUB_STEP_SUMMARY": str(cwd / "summary.md")}, timeout=HANG_S, cwd=cwd)
        assert done.returncode == (exits[index] if index < len(exits) else 0), (args, done.stdout, done.stderr)
        printed += done.stdout + done.stderr
    for excerpt in (b for b in found if b.kind == "printed"):
        assert missing_parts(excerpt.body, printed) == [], (excerpt.page, printed)
        assert unstarted_lines(excerpt.body, printed) == [], (excerpt.page, printed)


@pytest.mark.slow  # two quality runs over 688 queries and a gate: seconds by design
def test_the_ci_gate_example(cache_dir, tmp_path):
    # builtin:numpy-docs is built by the process that first needs it (cache_dir: this test's), in a process of its
    # own: one the test session imported scipy into reads numpy.sinc's docstring extended (0.6429, not 0.6427).
    run_example("ci-gate", {}, tmp_path, exits=(0, 0, 1))


def _queue_server(tmp_path: Path, service_ms: float):
    from tests.sizing.test_size_command import _start_queue_server  # the queue server as the size tests start it

    return _start_queue_server(tmp_path, service_ms)


@pytest.mark.slow  # a measured search within its --max-time budget
def test_the_sizing_example(cache_dir, tmp_path):
    url, proc = _queue_server(tmp_path, 20)
    try:
        run_example("size-queue", {"http://127.0.0.1:8080": url}, tmp_path)
    finally:
        stop_process(proc)


@pytest.mark.slow  # interleaved rounds within a --max-time budget
def test_the_interleave_example(cache_dir, tmp_path):
    started = [_queue_server(tmp_path, service_ms) for service_ms in (20, 22)]
    try:
        urls = {"http://127.0.0.1:8082": started[0][0], "http://127.0.0.1:8083": started[1][0]}
        run_example("ci-interleave", urls, tmp_path)
    finally:
        for _, proc in started:
            stop_process(proc)


def test_the_quality_example(cache_dir, tmp_path, tei_fixture):
    embedder, reranker = tei_fixture(), tei_fixture(model_kind="reranker")
    urls = {"http://127.0.0.1:8080": embedder.url, "http://127.0.0.1:8081": reranker.url}
    run_example("quality-served", urls, tmp_path)
