"""`load --repeat N` against the loopback fixture, then `compare` on its repeats: pass, fail and inconclusive."""

from __future__ import annotations

import shutil

import pytest

from bench.results.store import read_results

SHORT = ["--concurrency", "1,2", "--duration", "0.4s", "--warmup", "0.1s", "--repeat", "2"]


@pytest.mark.slow  # eight measured load points
@pytest.mark.usefixtures("machine_never_busy")  # the gate's mechanics on repeats; the busy rule: test_compare_busy.py
def test_repeated_points_then_compare_pass_fail_and_inconclusive(tmp_path, load_server, ragbench):
    fast, _ = load_server(service_ms=2)
    slow, _ = load_server(service_ms=50)  # ~10x slower per request at these concurrencies, even on a loaded machine
    code, out, _ = ragbench("load", "-e", f"tei=tei@{fast}", *SHORT, "--out", tmp_path / "a")
    assert code == 0, out
    assert "2 repeats)" in out  # the table shows each point's mean and interval
    results = read_results(tmp_path / "a" / "results.jsonl")
    assert results.header.load["repeat"] == 2
    points = results.load_points
    assert [p.concurrency for p in points] == [1, 2]  # one record per point, its repeats inside
    for p in points:
        assert len(p.repeats) == 2 and p.intervals is not None and p.intervals.repeats == 2
        assert p.requests.ok == sum(r.requests.ok for r in p.repeats)
        tput = p.intervals.throughput.texts_per_s
        assert tput.low <= tput.mean <= tput.high
    code, out, _ = ragbench("load", "-e", f"tei=tei@{slow}", *SHORT, "--out", tmp_path / "b")
    assert code == 0, out
    a, b = tmp_path / "a", tmp_path / "b"

    # the slow fixture as the baseline: the fast one is many times faster, far clear of ×1.5 whatever the noise
    code, out, _ = ragbench("compare", b, a, "--min-throughput-ratio", "1.5")
    assert code == 0 and out.count("the whole interval is clear of the limit ×1.5") == 2, out
    # A/A at a ratio of 1: two different repeats each side always straddle it (a copy: a run against itself is refused)
    same = tmp_path / "a_copy"
    shutil.copytree(a, same)
    code, out, _ = ragbench("compare", a, same, "--min-throughput-ratio", "1")
    assert code == 0 and "2 INCONCLUSIVE" in out and "counted as pass: --inconclusive pass" in out, out
    assert ragbench("compare", a, same, "--min-throughput-ratio", "1", "--inconclusive", "fail")[0] == 1
    code, out, _ = ragbench("compare", a, b, "--min-throughput-ratio", "0.9")
    # a FAIL's first line names the check that decided it (issue 46), then one FAIL line per regressed check
    first, *rest = out.splitlines()
    assert code == 1 and first.startswith("ragbench compare: FAIL (2 of 2 checks regressed"), out
    assert first.endswith(" — load: tei embed closed batch 1 conc 1"), out  # the first regressed check decided
    failed = [line for line in rest if line.startswith("FAIL  load: ")]
    assert len(failed) == 2 and all("the whole interval is past the limit ×0.9" in line for line in failed), out
    assert "gate ignores noise" not in out
