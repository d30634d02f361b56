"""A suite's load sweep against a real loopback TEI-shaped server (tests/load/fixture_server.py), then the
gate: the same sweep against a server four times slower must not pass."""

from __future__ import annotations

import json

import pytest

from tests.harness.cli import run_cli

SUITE = """
[gate]
min_throughput_ratio = 0.8
max_p99_increase = "50%"

[endpoints]
tei = "tei@${RAGBENCH_TEST_TEI}"

[[load]]
endpoints = ["tei"]
batch = [4]
concurrency = [2]
requests = 100  # a p99 needs 100 answers (bench/load/histograms.py MIN_SAMPLES)
warmup = "0.2s"
"""


@pytest.mark.slow  # a measured load of seconds by design
@pytest.mark.usefixtures("machine_never_busy")  # a gate on a 10 ms server: the busy rule has its own tests
def test_a_suite_load_sweep_gates_a_slower_server(tmp_path, monkeypatch, capsys, load_server):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    suite = tmp_path / "load.toml"
    suite.write_text(SUITE)
    fast, _ = load_server(service_ms=10)
    slow, _ = load_server(service_ms=40)
    monkeypatch.setenv("RAGBENCH_TEST_TEI", fast)
    code, out, err = run_cli(["run", str(suite), "--out", str(tmp_path / "base")], monkeypatch, capsys)
    assert code == 0, out + err
    assert (tmp_path / "base" / "load" / "results.jsonl").is_file()
    monkeypatch.setenv("RAGBENCH_TEST_TEI", slow)
    code, out, err = run_cli(
        [
            "run",
            str(suite),
            "--out",
            str(tmp_path / "cur"),
            "--baseline",
            str(tmp_path / "base"),
            "--junit",
            str(tmp_path / "j.xml"),
        ],
        monkeypatch,
        capsys,
    )
    _code_json, report, _ = run_cli(
        ["compare", str(tmp_path / "base"), str(tmp_path / "cur"), "--format", "json", "--min-throughput-ratio", "0.8"],
        monkeypatch,
        capsys,
    )
    [check] = json.loads(report)["checks"]
    figures = check["figures"]
    # Four times the service time at the same concurrency: about a quarter of the throughput. The margin: a busy machine
    # adds some o ms to every request of both runs, and (10 + o) / (40 + o) stays under the gate's 0.8 while o < 110 ms
    # (under 0.5, the former bound, only while o < 20 ms). No answer can come sooner than the slow server's 40 ms.
    assert figures["throughput_ratio"] < 0.8 and figures["current_p99_ms"] >= 40, figures
    # Two users waiting 40 ms each are far from this client's ceiling, however busy the machine: gated.
    assert not figures["client_saturated"], figures
    assert (code, check["status"]) == (1, "fail"), out + err
    assert "FAIL  load: load tei embed closed batch 4 conc 2" in out


def test_a_suite_whose_load_measured_nothing_exits_3_and_says_which(tmp_path, monkeypatch, capsys, load_server):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    suite = tmp_path / "load.toml"
    suite.write_text(SUITE)
    refusing, _ = load_server(service_ms=1, overload_s=600, overload_status=500)  # every request after the preflight
    monkeypatch.setenv("RAGBENCH_TEST_TEI", refusing)
    code, out, err = run_cli(["run", str(suite), "--out", str(tmp_path / "out")], monkeypatch, capsys)
    assert code == 3, out + err
    assert (
        "!! failed: load: 1 of 1 load points measured nothing or had no successful request: "
        "tei embed closed batch 4 conc 2: "
        "no request succeeded: 100 sent (5xx 100)" in out
    )
    assert err.strip().splitlines()[-1].startswith("ragbench: error: load: 1 of 1 load points measured nothing")


def test_a_suite_load_point_past_its_error_limit_exits_1(tmp_path, monkeypatch, capsys, load_server):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    suite = tmp_path / "load.toml"
    suite.write_text(SUITE + "max_error_rate = 0.02\n")
    flaky, _ = load_server(service_ms=1, reset_every=10)  # one connection in ten reset: 10% errors
    monkeypatch.setenv("RAGBENCH_TEST_TEI", flaky)
    code, out, err = run_cli(["run", str(suite), "--out", str(tmp_path / "out")], monkeypatch, capsys)
    assert code == 1, out + err
    assert (
        "!! errors past the limit: load: tei embed closed batch 4 conc 2: error rate" in out
        and "> 2.00% (connection" in out
    )


INTERLEAVED = """
[gate]
min_throughput_ratio = 0.95

[endpoints]
a = "tei@${RAGBENCH_TEST_A}"
b = "tei@${RAGBENCH_TEST_B}"

[[load]]
endpoints = ["a", "b"]
interleave = true
rounds = 3
window = "0.5s"
warmup = "0.2s"
"""


@pytest.mark.slow  # an interleaved load of seconds by design
def test_a_suite_interleaved_job_is_gated_on_its_own_rounds_without_a_baseline(
    tmp_path, monkeypatch, capsys, load_server
):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    suite = tmp_path / "ab.toml"
    suite.write_text(INTERLEAVED)
    fast, _ = load_server(service_ms=10)
    slow, _ = load_server(service_ms=40)
    monkeypatch.setenv("RAGBENCH_TEST_A", fast)
    monkeypatch.setenv("RAGBENCH_TEST_B", slow)
    code, out, err = run_cli(["run", str(suite), "--out", str(tmp_path / "out")], monkeypatch, capsys)
    assert "only the interleaved jobs are gated" in out, out + err
    assert "FAIL  load: load b ÷ a" in out and "3 rounds paired" in out, out + err
    assert code == 1, out + err
