"""Progress in a log that is not a terminal: a line per phase start and end, at most one every LOG_EVERY_S between."""

from __future__ import annotations

from bench.core.progress import LogLines


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_phase_says_its_start_and_end_and_at_most_one_line_per_interval_between():
    clock, lines = Clock(), []
    log = LogLines(lines.append, every_s=10.0, clock=clock)
    advance = log.factory("bm25: querying", 100)
    for _ in range(99):  # 99 advances over 49.5 s: lines at 10, 20, 30, 40 s only
        clock.now += 0.5
        advance(1)
    assert lines[0] == "bm25: querying: started (100 to do)"
    between = lines[1:]
    assert [line.split(" after ")[1] for line in between] == ["10 s", "20 s", "30 s", "40 s"]
    clock.now += 0.5
    advance(1)
    assert lines[-1] == "bm25: querying: done, 100/100 in 50.0 s"
    log.close()
    assert len(lines) == 6  # a finished phase says nothing more at the end


def test_a_phase_stopped_short_says_where_and_an_unbounded_one_counts():
    clock, lines = Clock(), []
    log = LogLines(lines.append, every_s=10.0, clock=clock)
    ingest = log.factory("dense: encoding corpus", 1000)
    stream = log.factory("stream", None)
    ingest(250)
    clock.now = 11.0
    stream(7)
    assert lines[-2:] == ["dense: encoding corpus: 250/1,000 after 11 s", "stream: 7 after 11 s"]
    log.close()
    assert lines[-1] == "dense: encoding corpus: stopped at 250/1,000"


def test_a_phase_with_nothing_to_do_says_so_once_and_never_again():
    # Open WebUI's upload phase of a knowledge base that holds every file already, while the queries run on.
    clock, lines = Clock(), []
    log = LogLines(lines.append, every_s=10.0, clock=clock)
    log.factory("openwebui: uploading to 'kb'", 0)
    querying = log.factory("openwebui: querying", 100)
    for _ in range(100):
        clock.now += 0.5
        querying(1)
    log.close()
    assert [line for line in lines if "uploading" in line] == ["openwebui: uploading to 'kb': nothing to do"]
