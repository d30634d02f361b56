"""Faults during a sweep: each is counted in its point, the sweep goes on (or ends cleanly), nothing is lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.core.errors import MeasurementFailed
from bench.endpoints.spec import parse_endpoint_spec
from bench.load.plan import SweepPlan, plan_sweep
from bench.load.points import PointConfig, SweepConfig
from bench.load.sweep import run_load
from bench.load.workload import Workload
from bench.results.lifecycle import Output
from bench.results.store import read_results

ROOT = Path(__file__).resolve().parents[2]


def _workload() -> Workload:
    texts = [f"text number {i}" for i in range(64)]
    return Workload(texts, texts[:8], "inline", lambda ts: [len(t.split()) for t in ts], "words")


def _sweep(**lists) -> SweepPlan:
    return plan_sweep(
        SweepConfig(
            PointConfig(op="embed", duration_s=1.0, warmup_s=0.0, timeout_s=5.0), **{"concurrencies": [2], **lists}
        )
    )


@pytest.mark.slow  # a measured load of seconds by design
def test_429_for_a_while_is_counted_and_the_sweep_goes_on(load_server, tmp_path):
    url, _ = load_server(service_ms=1, overload_s=0.6)
    run_load([parse_endpoint_spec(f"t=tei@{url}")], _sweep(concurrencies=[2, 4]), _workload(), Output(tmp_path))
    results = read_results(tmp_path / "results.jsonl")
    first, second = results.load_points
    assert first.requests.errors.get("429", 0) > 0 and first.requests.ok > 0
    assert "Model is overloaded" in first.error_examples["429"]
    assert first.requests.sent == first.requests.ok + sum(first.requests.errors.values())
    assert second.requests.errors == {} and second.requests.ok > 0  # overload over: the next point is clean
    assert results.end.status == "complete"
    # Latencies are of successes only: the quick 429s do not pull them down.
    assert first.latency_ms.service.count == first.requests.ok


def test_connection_resets_are_connection_errors(load_server, tmp_path):
    url, _ = load_server(service_ms=1, reset_every=25)
    run_load([parse_endpoint_spec(f"t=tei@{url}")], _sweep(), _workload(), Output(tmp_path))
    point = read_results(tmp_path / "results.jsonl").load_points[0]
    assert point.requests.errors["connection"] > 0 and point.requests.ok > 0
    assert set(point.requests.errors) == {"connection"}
    # One request in 25 was reset: the rest were answered on new connections.
    assert point.requests.errors["connection"] == pytest.approx(point.requests.sent / 25, rel=0.2, abs=2)


def test_batch_too_large_is_its_own_class(load_server, tmp_path):
    url, _ = load_server(service_ms=1, max_batch=8)
    run_load([parse_endpoint_spec(f"t=tei@{url}")], _sweep(batches=[4, 16]), _workload(), Output(tmp_path))
    small, large = read_results(tmp_path / "results.jsonl").load_points
    assert small.requests.errors == {} and small.throughput.texts_per_s == pytest.approx(
        4 * small.throughput.requests_per_s
    )
    assert large.requests.ok == 0 and set(large.requests.errors) == {"too_large"}
    assert "batch size 16 > maximum allowed batch size 8" in large.error_examples["too_large"]


@pytest.mark.slow  # a measured load of seconds by design
def test_server_killed_mid_sweep_ends_cleanly_with_finished_points(load_server, tmp_path):
    url, proc = load_server(service_ms=1)

    def kill_after_first(record) -> None:
        if proc.popen.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.popen.wait()

    # The server answered, then died: the command ran and a measurement failed (exit 3), not a user error.
    with pytest.raises(MeasurementFailed, match="no answer at all"):
        run_load(
            [parse_endpoint_spec(f"t=tei@{url}")],
            _sweep(concurrencies=[1, 2, 4]),
            _workload(),
            Output(tmp_path),
            on_point=kill_after_first,
        )
    results = read_results(tmp_path / "results.jsonl")
    assert len(results.load_points) == 2  # the finished one, and the one that found nothing to talk to
    assert results.load_points[0].requests.ok > 0
    assert results.load_points[1].requests.errors.get("connection", 0) > 0
    assert results.end.status == "failed" and "no answer at all" in results.end.error


@pytest.mark.slow  # a subprocess stopped by a signal
def test_sigterm_keeps_every_finished_point(load_server, tmp_path):
    url, _ = load_server(service_ms=1)
    out = tmp_path / "out"
    argv = [
        sys.executable,
        "-m",
        "bench",
        "load",
        "-e",
        f"t=tei@{url}",
        "--concurrency",
        "1,2,4,8",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--out",
        str(out),
    ]
    proc = subprocess.Popen(
        argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    results = out / "results.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not results.exists() or '"load_point"' not in results.read_text()):
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr.decode()[-500:]
    read = read_results(results)
    assert 1 <= len(read.load_points) < 4
    assert read.end is not None and read.end.status == "interrupted"
    assert (out / "report.html").exists()


def test_an_earlier_run_is_kept_unless_overwrite(load_server, tmp_path, monkeypatch, capsys):
    from tests.harness.cli import run_cli

    url, _ = load_server(service_ms=1)
    args = ["load", "-e", f"t=tei@{url}", "--duration", "0.3s", "--warmup", "0s", "--out", str(tmp_path)]
    assert run_cli(args, monkeypatch, capsys)[0] == 0
    first = (tmp_path / "results.jsonl").read_text()
    code, _, stderr = run_cli(args, monkeypatch, capsys)
    assert code == 2 and "holds an earlier run" in stderr and len(stderr.strip().splitlines()) == 1
    assert (tmp_path / "results.jsonl").read_text() == first
    assert run_cli([*args, "--overwrite"], monkeypatch, capsys)[0] == 0
    assert (tmp_path / "results.jsonl").read_text() != first


def test_a_200_in_the_wrong_shape_is_a_bad_response(load_server, tmp_path):
    url, _ = load_server(service_ms=1, wrong_shape_every=10)
    run_load([parse_endpoint_spec(f"t=tei@{url}")], _sweep(concurrencies=[1]), _workload(), Output(tmp_path))
    point = read_results(tmp_path / "results.jsonl").load_points[0]
    bad = point.requests.errors["bad_response"]
    # Small bodies fit the parsing budget: all of them are parsed, so one in ten is found bad.
    assert bad >= 1 and point.requests.ok > 0 and point.requests.validated == point.requests.sent
    assert "[[float]] for 1 inputs" in point.error_examples["bad_response"]
    assert bad == pytest.approx(point.requests.sent / 10, rel=0.35, abs=3)


# --- figures that tell the truth when the server fails --------------------------------------------------------------


@pytest.mark.slow  # a measured load of seconds by design
@pytest.mark.parametrize("loop", ["open", "closed"])
def test_a_server_that_hangs_mid_point_is_measured_over_the_whole_window(
    load_server, tmp_path, monkeypatch, capsys, loop
):
    """Answers stop after ~0.5 s of a 1.5 s point: the rates are over the measured window (to the last
    timeout, past the intended end), not up to the last success, and the point is marked."""
    from tests.harness.cli import run_cli

    url, _ = load_server(service_ms=1, hang_after=50)  # 50 answers, then none
    flags = ["--rate", "100"] if loop == "open" else ["--concurrency", "2"]
    code, stdout, _ = run_cli(
        [
            "load",
            "-e",
            f"t=tei@{url}",
            *flags,
            "--duration",
            "1.5s",
            "--warmup",
            "0s",
            "--timeout",
            "0.5s",
            "--out",
            str(tmp_path),
        ],
        monkeypatch,
        capsys,
    )
    point = read_results(tmp_path / "results.jsonl").load_points[0]
    assert point.requests.ok == 50 and point.requests.errors["timeout"] >= 2
    # The window ends with the last timeout, never at the last good answer: open loop, the last request is sent
    # one interval (1/100 s) before the intended 1.5 s end and times out 0.5 s later.
    assert point.duration_s >= (1.5 - 1 / 100 + 0.5 if loop == "open" else 1.5)
    assert point.throughput.requests_per_s == pytest.approx(50 / point.duration_s, rel=1e-4)
    assert point.status == "errors" and "timeout" in point.problem
    assert code == 1 and "ERRORS: t " in stdout


def test_a_server_that_hangs_during_the_warm_up_fails_the_point_by_name(load_server, tmp_path, monkeypatch, capsys):
    from tests.harness.cli import run_cli

    url, _ = load_server(service_ms=1, hang_after=5)
    code, stdout, stderr = run_cli(
        [
            "load",
            "-e",
            f"t=tei@{url}",
            "--concurrency",
            "2",
            "--duration",
            "0.5s",
            "--warmup",
            "0.5s",
            "--timeout",
            "1s",
            "--out",
            str(tmp_path),
        ],
        monkeypatch,
        capsys,
    )
    results = read_results(tmp_path / "results.jsonl")
    point = results.load_points[0]
    assert point.requests.sent == 0 and point.status == "failed" and "nothing measured" in point.problem
    assert code == 3 and "FAILED: t embed closed batch 1 conc 2: nothing measured" in stdout
    error = stderr.strip().splitlines()[-1]  # after the progress bars
    assert (
        error.startswith(
            "ragbench: error: 1 of 1 load points measured nothing or had no successful request: "
            "t embed closed batch 1 conc 2: nothing measured"
        )
        and stderr.count("ragbench: error") == 1
    )
    assert (tmp_path / "report.html").is_file()  # written before the error line
    assert results.end.status == "complete"  # the run itself finished: the exit code says what it measured


@pytest.mark.parametrize("status, cls", [(429, "429"), (401, "4xx"), (500, "5xx")])
def test_every_measured_request_failing_exits_3(load_server, tmp_path, monkeypatch, capsys, status, cls):
    from tests.harness.cli import run_cli

    url, _ = load_server(service_ms=1, overload_s=600, overload_status=status)  # from the request after the preflight
    code, stdout, _ = run_cli(
        # --timeout 5s bounds the drain after the point (a server refusing with 429 never looks idle) to
        # max(timeout, DRAIN_MIN_S) = 5 s instead of the 30 s default; every request still answers in ~1 ms.
        [
            "load",
            "-e",
            f"t=tei@{url}",
            "--duration",
            "0.3s",
            "--warmup",
            "0s",
            "--timeout",
            "5s",
            "--out",
            str(tmp_path),
        ],
        monkeypatch,
        capsys,
    )
    point = read_results(tmp_path / "results.jsonl").load_points[0]
    assert point.requests.ok == 0 and set(point.requests.errors) == {cls}
    assert point.status == "failed" and point.problem.startswith("no request succeeded")
    assert code == 3 and "FAILED: t embed closed batch 1 conc 1: no request succeeded" in stdout


@pytest.mark.parametrize(
    "bad, says",
    [
        ("nan", "finite numbers"),
        ("empty", "non-zero dimension"),
        ("strings", "other than numbers"),
        ("dim", "dimension 4"),
    ],
)
def test_invalid_answers_are_bad_responses_never_successes(load_server, tmp_path, bad, says):
    url, _ = load_server(service_ms=1, bad_answer=bad)  # the preflight's answer is good (dimension 4), then `bad`
    run_load([parse_endpoint_spec(f"t=tei@{url}")], _sweep(concurrencies=[1]), _workload(), Output(tmp_path))
    point = read_results(tmp_path / "results.jsonl").load_points[0]
    assert point.requests.ok == 0 and point.requests.errors == {"bad_response": point.requests.sent}
    assert says in point.error_examples["bad_response"] and point.status == "failed"


def test_rerank_scores_that_are_not_numbers_are_bad_responses(load_server, tmp_path):
    url, _ = load_server(service_ms=1, bad_answer="nan")
    sweep = SweepConfig(PointConfig(op="rerank", duration_s=0.5, warmup_s=0.0, timeout_s=5.0), documents=[3])
    run_load([parse_endpoint_spec(f"r=tei-rerank@{url}")], plan_sweep(sweep), _workload(), Output(tmp_path))
    point = read_results(tmp_path / "results.jsonl").load_points[0]
    assert point.requests.ok == 0 and set(point.requests.errors) == {"bad_response"}
    assert "finite number" in point.error_examples["bad_response"]


def test_a_stopped_pool_leaves_no_thread_behind():
    """Its manager thread, left running, closes its wakeup pipe while the interpreter's exit hook writes to it: a
    traceback after a preflight failure's one line (seen on `load --interleave` with no server, 1 run in 4)."""
    from bench.load.pool import spawning_pool, stop_pool

    spawning = spawning_pool(1)
    spawning.ready()
    manager = spawning.pool._executor_manager_thread
    stop_pool(spawning.pool)
    assert manager is not None and not manager.is_alive()
