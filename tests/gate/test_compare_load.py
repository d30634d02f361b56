"""`compare` on `ragbench load` results: per matching sweep point, throughput ratio and p99 change."""

from __future__ import annotations

import json
import re

import pytest

from tests.gate.helpers import load_point, write_load_results

GATE = ["--min-throughput-ratio", "0.95", "--max-p99-increase", "10%"]


def _runs(tmp_path, base: list, cur: list):
    return write_load_results(tmp_path / "base", base), write_load_results(tmp_path / "cur", cur)


def test_points_within_thresholds_pass_and_show_their_figures(tmp_path, compare):
    base, cur = _runs(
        tmp_path,
        [load_point(batch=1), load_point(batch=8)],
        [load_point(batch=1, texts_per_s=980, p99_ms=21), load_point(batch=8)],
    )
    code, out, _ = compare(base, cur, *GATE)
    assert code == 0, out
    assert (
        "pass  load: tei embed closed batch 1 conc 4: texts/s 1000.0 → 980.0 (×0.980), p99 20.0 → 21.0 ms (+5.0%)"
        in out
    )


@pytest.mark.parametrize("texts_per_s, p99_ms, failing", [(900, 20, True), (1000, 23, True), (960, 21.9, False)])
def test_slower_or_later_points_fail(tmp_path, compare, texts_per_s, p99_ms, failing):
    base, cur = _runs(tmp_path, [load_point()], [load_point(texts_per_s=texts_per_s, p99_ms=p99_ms)])
    code, out, _ = compare(base, cur, *GATE)
    assert code == (1 if failing else 0), out
    assert out.count("FAIL  load:") == (1 if failing else 0)


def test_a_saturated_client_is_said_not_gated_in_every_output(tmp_path, compare):
    base, cur = _runs(
        tmp_path,
        [load_point()],
        [load_point(texts_per_s=100, p99_ms=500, saturated=True, client_extra={"utilization": 0.97})],
    )
    code, out, _ = compare(base, cur, *GATE, "--junit", tmp_path / "j.xml", "--summary", tmp_path / "s.md")
    assert code == 0
    assert out.startswith("ragbench compare: pass (0 checks, none regressed; 1 not gated, each says why)")
    reason = "throughput and p99 not gated: the load client saturated in the current run (97% of its ceiling)"
    assert "info  load: tei embed closed batch 8 conc 4: texts/s 1000.0 → 100.0 (×0.100)" in out and reason in out
    junit = (tmp_path / "j.xml").read_text()
    assert f'<skipped message="not gated: {reason}"' in junit
    summary = (tmp_path / "s.md").read_text()
    assert "**Not gated (1 of 1 checks):**" in summary and f"tei embed closed batch 8 conc 4 — {reason}" in summary


def test_an_error_rate_rise_fails_whatever_the_throughput_says(tmp_path, compare):
    """The issue's hung server: 349 of 801 answered, texts/s within the ratio, 452 timeouts."""
    base, cur = _runs(
        tmp_path, [load_point(sent=800)], [load_point(sent=801, errors={"timeout": 452}, texts_per_s=990)]
    )
    code, out, _ = compare(base, cur, "--min-throughput-ratio", "0.9")
    assert code == 1
    assert "FAIL  load: tei embed closed batch 8 conc 4: texts/s 1000.0 → 990.0 (×0.990)" in out
    assert "errors 0 → 452 (0.00% → 56.43% of requests)" in out and "max error-rate rise 0.00%" in out
    assert compare(base, cur)[0] == 1  # strict by default, with no other threshold
    assert compare(base, cur, "--max-error-rate-increase", "60%")[0] == 0  # a rise the user allows


def test_a_current_point_with_no_success_fails_even_when_nothing_else_is_gated(tmp_path, compare):
    base, cur = _runs(tmp_path, [load_point(errors={"429": 100})], [load_point(errors={"429": 100}, texts_per_s=0.0)])
    code, out, _ = compare(base, cur, "--max-error-rate-increase", "100%")
    assert code == 1 and "the current point had no successful request" in out


POINT = "record tei embed closed batch 8 conc 4:"  # a message names the point


@pytest.mark.parametrize(
    "edit, says",
    [
        (
            ('"texts_per_s": 1000.0', '"texts_per_s": "fast"'),
            f"record: field {'throughput.texts_per_s'!r} has the wrong",
        ),
        (('"texts_per_s": 1000.0', '"texts_per_s": NaN'), f"{POINT} throughput.texts_per_s is null, not a"),
        # the reader reads null back as NaN: the message names the point and the field, and says null
        (('"texts_per_s": 1000.0', '"texts_per_s": null'), f"{POINT} throughput.texts_per_s is null, not a"),
        (('"p99": 20.0', '"p99": NaN'), f"{POINT} latency_ms.service.p99 is null, not a"),
        (('"p99": 20.0', '"p99": null'), f"{POINT} latency_ms.service.p99 is null, not a"),
        (('"ok": 100', '"ok": "all"'), "record: field 'requests.ok' has the wrong type (expected int)"),
        (('"ok": 100', '"ok": -1'), f"{POINT} requests.sent, ok, unsent and every errors count"),
        (('"ok": 100', '"ok": 101'), f"{POINT} requests.ok 101 > sent 100"),
        (('"saturated": false', '"saturated": "no"'), "record: field 'client.saturated' has the wrong type"),
    ],
)
def test_a_load_point_compare_cannot_judge_is_an_input_error(tmp_path, compare, edit, says):
    base, cur = _runs(tmp_path, [load_point()], [load_point()])
    lines = cur.read_text().splitlines()
    assert edit[0] in lines[1]
    lines[1] = lines[1].replace(edit[0], edit[1], 1)
    cur.write_text("\n".join(lines) + "\n")
    for args in ((base, cur), (cur, base), (base, cur, *GATE)):
        code, _, err = compare(*args)
        assert code == 2 and err.count("\n") == 1, err
        assert f"ragbench: error: {cur}:2: load_point {says}" in err


def test_a_load_point_appended_twice_is_an_input_error(tmp_path, compare):
    """A second record of the same point would otherwise replace (or be hidden by) the first: which counts?"""
    base, cur = _runs(tmp_path, [load_point()], [load_point(texts_per_s=500)])
    lines = cur.read_text().splitlines()
    cur.write_text("\n".join([*lines, lines[1].replace('"texts_per_s": 500.0', '"texts_per_s": 1000.0')]) + "\n")
    code, _, err = compare(base, cur, *GATE)
    assert code == 2 and f"{cur}:4: load_point tei embed closed batch 8 conc 4 again (first on line 2)" in err


def test_benchmark_json_refuses_what_it_cannot_read(tmp_path):
    from bench.core.errors import InputError
    from bench.gate.benchmark_json import benchmark_json
    from bench.results.store import read_results

    path = write_load_results(tmp_path, [load_point(latencies_us=[1000, 2000])])
    text = path.read_text().replace('"texts_per_s": 1000.0', '"texts_per_s": "fast"')
    path.write_text(text)
    with pytest.raises(
        InputError, match=re.escape(":2: load_point record: field 'throughput.texts_per_s' has the wrong type")
    ):
        benchmark_json([("", read_results(path))])


def test_without_thresholds_load_is_reported_not_gated(tmp_path, compare):
    base, cur = _runs(tmp_path, [load_point()], [load_point(texts_per_s=10)])
    code, out, _ = compare(base, cur)
    assert code == 0 and "not gated" in out


def test_a_point_missing_from_the_current_run_fails_and_a_renamed_endpoint_matches(tmp_path, compare):
    base, cur = _runs(
        tmp_path,
        [load_point(endpoint="old", batch=1), load_point(endpoint="old", batch=32)],
        [load_point(endpoint="new", batch=1), load_point(endpoint="new", batch=64)],
    )
    code, out, _ = compare(base, cur, *GATE, "--match", "old=new")
    assert code == 1
    assert "pass  load: new embed closed batch 1 conc 4" in out
    assert "FAIL  load: new embed closed batch 32 conc 4: not measured in the current run" in out
    assert "!! load point new embed closed batch 64 conc 4 is new in the current run" in out


def test_benchmark_json_has_throughput_and_latency_from_the_histogram(tmp_path, compare):
    from pytest_benchmark.stats import Stats

    latencies = [1000 + 10 * i for i in range(200)]  # microseconds
    point = load_point(latencies_us=latencies, texts_per_s=800.0)
    base, cur = _runs(tmp_path, [point], [point])
    assert compare(base, cur, "--benchmark-json", tmp_path / "b.json")[0] == 0
    entries = {e["name"]: e for e in json.loads((tmp_path / "b.json").read_text())["benchmarks"]}
    latency = entries["tei embed closed batch 8 conc 4 latency"]["stats"]
    assert set(Stats.fields) <= set(latency)
    assert latency["rounds"] == 200
    assert latency["min"] == pytest.approx(0.001, rel=1e-3) and latency["max"] == pytest.approx(0.00299, rel=1e-3)
    assert latency["mean"] == pytest.approx(sum(latencies) / 200 / 1e6, rel=1e-3)
    throughput = entries["tei embed closed batch 8 conc 4 throughput"]
    assert throughput["stats"]["ops"] == pytest.approx(800.0)
    assert throughput["stats"]["iterations"] == 8000 and throughput["stats"]["rounds"] == 1
    assert throughput["extra_info"]["unit"] == "seconds per text"


def test_pytest_benchmark_itself_reads_the_benchmark_json(tmp_path, compare):
    """`pytest-benchmark compare FILE` (its own CLI) loads and tabulates what compare wrote."""
    import subprocess
    import sys
    from pathlib import Path

    point = load_point(latencies_us=[1000 + 10 * i for i in range(200)])
    base, cur = _runs(tmp_path, [point], [point])
    assert compare(base, cur, "--benchmark-json", tmp_path / "0001_run.json")[0] == 0
    tool = Path(sys.executable).with_name("pytest-benchmark")
    done = subprocess.run(
        [str(tool), "compare", str(tmp_path / "0001_run.json"), "--columns", "min,max,mean,ops,rounds"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )  # outside the repo: no conftest to load
    assert done.returncode == 0, done.stderr
    assert "tei embed closed batch 8 conc 4 latency" in done.stdout and "throughput" in done.stdout
