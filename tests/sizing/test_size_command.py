"""`ragbench size` end to end: a server of known capacity (saturation found near it), real infinity-emb, bad input."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from bench.load.points import point_label
from bench.results.schema import SCHEMA, VERSION, GpuTelemetryRecord
from bench.results.store import read_results
from bench.sizing.telemetry import QUANTITIES
from tests.harness.cli import run_cli
from tests.harness.process import free_port, start_process, stop_process, wait_healthy

QUEUE_SERVER = Path(__file__).with_name("queue_server.py")
ROOT = Path(__file__).resolve().parents[2]


def _start_queue_server(tmp_path: Path, service_ms: float):
    port = free_port()
    proc = start_process(
        "queue-server",
        [sys.executable, str(QUEUE_SERVER), "--port", str(port), "--service-ms", str(service_ms)],
        tmp_path / f"queue-{port}.log",
    )
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, f"{url}/metrics", deadline_s=30)
    return url, proc


@pytest.fixture
def queue_server(tmp_path: Path):
    url, proc = _start_queue_server(tmp_path, 20)
    try:
        yield url
    finally:
        stop_process(proc)


@pytest.fixture
def slow_endpoint(tmp_path: Path):
    """The user's case, scaled: one request at a time, 400 ms each: 2.5 requests/s, whatever the batch."""
    url, proc = _start_queue_server(tmp_path, 400)
    try:
        yield url
    finally:
        stop_process(proc)


SLOW_ARGS = ["--slo-p99", "2000", "--batch", "1", "--max-concurrency", "2", "--no-nvml"]
SLOW_BURSTS = ["--burst", "4", "--burst-batch", "1", "--burst-concurrency", "1"]


@pytest.mark.slow  # a measured search of about a minute by design
def test_size_answers_within_its_budget_on_a_slow_endpoint(slow_endpoint, tmp_path, monkeypatch, capsys):
    """2.5 requests/s, a 2 s p99 SLO, --max-time 60s: every point and probe is sized to fit the budget (their warm-up
    and measured windows together stay under it), the time expected is said at the start and after each probe,
    and the answer is a saturation rate at or under the capacity — whole, or a lower bound that says so."""
    out = tmp_path / "size"
    code, _stdout, stderr = run_cli(
        ["size", "-e", f"q=tei@{slow_endpoint}", *SLOW_ARGS, *SLOW_BURSTS, "--max-time", "60s", "--out", str(out)],
        monkeypatch,
        capsys,
    )
    assert code == 0, stderr
    results = read_results(out / "results.jsonl")
    (sizing,) = results.sizing
    measured = sum(p.warmup_s + p.duration_s for p in results.load_points)
    print(f"saturation {sizing.saturation.rate} requests/s, {measured:.1f} s measured, stopped {sizing.stopped}")
    assert measured <= 60.0
    sat = sizing.saturation
    # 60 s cannot hold a steady p99 verdict here (368 requests): a pass on a shorter window is said as unconfirmed,
    # never as the answer; whichever the answer holds sits at or under the capacity
    assert sat.rate is not None or sat.unconfirmed, sat
    assert all(rate <= 2.5 * 1.15 for rate in [*([sat.rate] if sat.rate else []), *sat.unconfirmed])
    assert all(p.unconfirmed is None or p.passed for p in sat.probes)
    # stopped early: a lower bound only while no rate failed above the best pass, else the interval between them
    # (no pass at all is no lower bound: "none" or "below X", issue 45)
    assert sizing.stopped is None or (
        sat.lower_bound is None
        if sat.rate is None
        else (sat.lower_bound == sizing.stopped) != (sat.first_failure is not None)
    )
    said = " ".join(stderr.split())  # the console wraps its lines
    assert "size: probably" in said and "--max-time 60 s bounds it" in said
    assert "s spent of the 60 s budget, about" in said
    assert "/s carried: passed" in said and " requests (95% interval" in said  # both rates on each verdict line
    by = {line.setting: line for line in sizing.lines}
    if sat.rate is None:
        assert by["saturation rate"].value in ("none", "below") or by["saturation rate"].value.startswith("below ")
        assert "none yet" not in by["saturation rate"].value  # no pass is never a lower bound (issue 45)
    else:
        assert "requests/s" in by["saturation rate (goodput, offered)"].value
        assert by["answered at the saturation rate (achieved)"].value.endswith(" texts/s")
    assert all(p.requests for p in sizing.saturation.probes)  # each verdict says how many requests it rests on


def _wait_for_verdicts(progress: Path, proc: subprocess.Popen[bytes], count: int, deadline_s: float) -> bool:
    """True once `progress` (the run's stderr) holds `count` probe verdict lines; False if the run ends first or the
    deadline (a hung run's guard, not a timing assertion) passes."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline and proc.poll() is None:
        said = " ".join(progress.read_text(errors="replace").split())  # the console wraps its lines
        if said.count("/s carried: ") >= count:  # each probe verdict line shows the rate offered and carried
            return True
        time.sleep(0.1)
    return False


# the SIGINT run's budget: a first probe's even share of it is seconds, and what is left when its verdict comes holds
# more probes even on a loaded 2-core runner (the first verdict came at ~25 s at load 2.5)
SIGNAL_BUDGET_S = 120


@pytest.mark.slow  # a subprocess stopped by a signal mid-search
def test_sigint_mid_search_writes_a_best_so_far_sizing_record(slow_endpoint, tmp_path):
    """Ctrl-C once a probe has finished: exit 130 (README), and the sizing record of what finished is written,
    labelled a lower bound with the rates passed and failed, before the end record; the report says so."""
    out = tmp_path / "size"
    argv = [sys.executable, "-m", "bench", "size", "-e", f"q=tei@{slow_endpoint}", *SLOW_ARGS, *SLOW_BURSTS]
    # Probes are sized from the service times' queue (docs/sizing.md): without a budget a Poisson probe here plans up to
    # 60 s of warm-up and 120 s of window (a steady p99 needs 368 requests), so --duration no longer keeps the first
    # verdict short; a --max-time gives each probe its even share of the budget, and SIGNAL_BUDGET_S leaves the search
    # most of it when the first verdict comes, so the signal, not the budget, stops it.
    argv += ["--duration", "2s", "--warmup", "0.5s", "--probe-requests", "5", "--max-time", f"{SIGNAL_BUDGET_S}s"]
    argv += ["--out", str(out)]
    progress = tmp_path / "stderr.txt"
    with progress.open("wb") as stderr_file:
        proc = subprocess.Popen(
            argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=stderr_file
        )
        # Wait on the condition, not on time: the first probe's verdict line. Its point is among the session's points
        # before the line is printed, and a signal from then on still counts it (adopt_measured), so the record
        # holds at least that probe. The search needs several probes at the default tolerance, so the run is still
        # searching when the signal comes. The 300 s deadline only ends a hung run (over twice SIGNAL_BUDGET_S).
        probed = _wait_for_verdicts(progress, proc, count=1, deadline_s=300)
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=120)
    stderr = progress.read_bytes()
    assert proc.returncode == 130, stderr.decode()[-800:]
    assert probed, "no probe verdict within 300 s: the signal came before the search"
    results = out / "results.jsonl"
    read = read_results(results)
    (sizing,) = read.sizing
    assert sizing.stopped == "stopped by SIGINT"
    assert read.end.status == "interrupted"
    assert len(sizing.saturation.probes) >= 1
    sat = sizing.saturation
    interval = sat.rate is not None and sat.first_failure is not None
    if sat.rate is not None:  # a lower bound only while no rate failed above the best pass
        assert sat.lower_bound == (None if interval else "stopped by SIGINT")
    (line,) = [x for x in sizing.lines if x.setting.startswith("saturation rate")]
    # the line names each kind of probe there was: passed, passed unconfirmed, inconclusive, failed
    undecided = [p for p in sat.probes if p.inconclusive or p.too_busy]
    failed = [p for p in sat.probes if (not p.passed and p not in undecided) or p.confirmed is False]
    assert ("failed at" in line.why) == bool(failed)
    assert ("inconclusive" in line.why) == any(p.inconclusive for p in sat.probes)
    if sat.rate is None:  # no pass: never "a lower bound" (issue 45)
        assert "best so far (stopped by SIGINT): no rate passed" in stdout.decode()
    elif interval:
        assert "best so far (stopped by SIGINT): the interval between" in stdout.decode()
        assert "Stopped early (stopped by SIGINT): the saturation rate lies between" in (out / "report.md").read_text()
    else:
        assert "best so far (stopped by SIGINT): a lower bound" in stdout.decode()
        assert "Best so far, a lower bound: stopped by SIGINT" in (out / "report.md").read_text()


@pytest.mark.slow
def test_saturation_rate_of_a_server_with_known_capacity(queue_server, tmp_path, monkeypatch, capsys):
    """One request at a time, 20 ms each: capacity 50 requests/s; constant arrivals above it queue without bound.

    The SLO leaves 280 ms for a busy machine's scheduling jitter; a rate r above capacity builds
    (r/50 - 1) x 3 s of queue in a 3 s probe, past 280 ms from 54.7 requests/s: the search must land
    between 0.85 and 1.15 x capacity. It bisects until the failing rate is within 15% of the passing one
    (--tolerance 0.15, the claim's own precision): every probe it would add past that lies above capacity,
    where each failing probe runs twice and drains its queue (seconds each)."""
    out = tmp_path / "size"
    code, stdout, stderr = run_cli(
        [
            "size",
            "-e",
            f"q=tei@{queue_server}",
            "--slo-p99",
            "300",
            "--batch",
            "1",
            "--max-concurrency",
            "4",
            "--arrival",
            "constant",
            "--duration",
            "3s",
            "--warmup",
            "0.5s",
            "--tolerance",
            "0.15",
            "--burst",
            "8",
            "--burst-batch",
            "1,4",
            "--burst-concurrency",
            "1,0",
            "--target-rps",
            "120",
            "--gpu-hourly-usd",
            "2",
            "--no-nvml",
            "--out",
            str(out),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 0, stderr
    results = read_results(out / "results.jsonl")
    (sizing,) = results.sizing
    rate = sizing.saturation.rate
    print(
        f"saturation {rate} requests/s (capacity 50), probes {[(p.rate, p.passed) for p in sizing.saturation.probes]}"
    )
    assert 50 * 0.85 <= rate <= 50 * 1.15
    assert sizing.saturation.first_failure > rate
    # A failing rate ends once more answers are over the SLO than a pass allows (seconds, not its whole window);
    # its throughput is over the window it ran (a server of 50/s answers about 50/s there, not a share of it).
    assert "ended early:" in " ".join((stdout + stderr).split())  # the progress lines
    failed = [p for p in results.load_points if p.loop == "open" and p.rate > 60]
    cut = [p for p in failed if p.requests.scheduled < 0.5 * p.rate * 3.0]  # under half of a --duration 3s window
    assert cut, [(p.rate, p.requests.scheduled, p.duration_s) for p in failed]
    assert all(p.throughput.requests_per_s > 0.5 * 50 for p in cut), [(p.rate, p.throughput) for p in cut]
    labels = {point_label(p) for p in results.load_points}
    for line in sizing.lines:  # every line's evidence is a point in the results file
        assert line.evidence and set(line.evidence) <= labels, line
    by = {line.setting: line for line in sizing.lines}
    assert by["replicas for --target-rps"].value == str(math.ceil(120 / rate))
    assert "no GPU telemetry" in sizing.telemetry
    assert results.end.status == "complete"
    report = (out / "report.md").read_text()
    # The answer leads, its evidence (every measured point) follows.
    assert (
        report.index("## Answer: ") < report.index("saturation rate (goodput, offered)") < report.index("## Evidence")
    )
    assert (out / "plots" / "size_goodput_1.png").is_file()
    assert "TEI --max-concurrent-requests" in stdout
    # On a GPU host the same file holds NVML windows per point: its report plots them (no GPU here, so the
    # records are written as `size` writes them, before the end record, and the report rebuilt).
    lines = (out / "results.jsonl").read_text().splitlines()
    window = {"gpu": 0, "name": "H200", "samples": 80, **{q: {"mean": 50.0, "max": 90.0} for q in QUANTITIES}}
    telemetry = [
        json.dumps(
            {
                **asdict(GpuTelemetryRecord("q", point_label(p), 0.0, 4.0, [window])),
                "schema": SCHEMA,
                "version": VERSION,
            }
        )
        for p in results.load_points
    ]
    (out / "results.jsonl").write_text("\n".join(lines[:-1] + telemetry + lines[-1:]) + "\n")
    code, _, stderr = run_cli(["report", str(out / "results.jsonl")], monkeypatch, capsys)
    assert code == 0, stderr
    assert (out / "plots" / "size_telemetry_1.png").is_file()


@pytest.mark.integration
def test_size_against_real_infinity(infinity_server, tmp_path, monkeypatch, capsys):
    out = tmp_path / "size"
    code, stdout, stderr = run_cli(
        [
            "size",
            "-e",
            f"inf=openai@{infinity_server.url}?model={infinity_server.embed_model}",
            "--slo-p99",
            "2000",
            # A steady p99 verdict near capacity needs minutes of probe (docs/sizing.md); this test is the command
            # end to end against the real server, so the budget bounds it (exit 0 on a spent --max-time).
            "--max-time",
            "45s",
            "--batch",
            "8",
            "--max-concurrency",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "0.3s",
            "--max-probes",
            "3",
            "--probe-requests",
            "30",
            "--burst",
            "16",
            "--burst-batch",
            "8",
            "--burst-concurrency",
            "0",
            "--lengths",
            "32",
            "--tokenizer",
            str(infinity_server.embed_model_path),
            "--out",
            str(out),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 0, stderr
    results = read_results(out / "results.jsonl")
    (sizing,) = results.sizing
    probes = sizing.saturation.probes  # a probe re-measured after failing: one open point per measurement
    measured = sum((p.measurements or 1) + (p.confirmed is not None) for p in probes)
    assert [p.loop for p in results.load_points].count("open") == measured >= 1
    # The bursts get what the search left of --max-time: measured, or the spent budget said (the answer stands).
    bursts_measured = any(p.loop == "burst" for p in results.load_points)
    assert bursts_measured or "budget (--max-time) was spent" in stdout, stdout
    assert all(p.length == 32 for p in results.load_points)
    assert (out / "report.html").is_file() and "<h2>Answer: " in (out / "report.html").read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--slo-p99", "0"], "--slo-p99 0.0: expected a positive number up to 3,600,000 (milliseconds)"),
        (["--slo-p99", "100", "--max-error-rate", "1.5"], "--max-error-rate 1.5"),
        (["--slo-p99", "100", "--batch", "0"], "--batch '0'"),
        (["--slo-p99", "100", "--target-rps", "-1"], "--target-rps -1.0"),
        (["--slo-p99", "100", "--arrival", "weird"], "--arrival 'weird'"),
        (["--slo-p99", "100", "--duration", "soon"], "--duration 'soon'"),
        (["--slo-p99", "100", "--probe-requests", "0"], "--probe-requests 0"),
        ([], "give the latency SLO once"),
        (["--slo-p99", "100", "--slo", "p95=1s"], "give the latency SLO once"),
        (["--slo", "p95"], "--slo 'p95': expected pNN=DURATION"),
        (["--slo", "p95=800"], "with a unit"),
        (["--slo", "p100=1s"], "--slo '100'"),
        (["--slo", "p95=2h"], "--slo '2h': at most 3,600 s"),
        (["--slo", "p95=800ms", "--max-time", "0s"], "--max-time '0s'"),
        (["--slo", "p95=800ms", "--max-time", "8d"], "--max-time '8d'"),
        (["--slo-p99", "100", "--target-rps", "1", "--target-texts-per-s", "8"], "give the target once"),
        (["--slo-p99", "100", "--target-tokens-per-s", "0"], "--target-tokens-per-s 0.0"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2_before_anything_is_written(args, message, tmp_path, monkeypatch, capsys):
    out = tmp_path / "size"
    code, _, stderr = run_cli(["size", "-e", "x=tei@http://127.0.0.1:9", *args, "--out", str(out)], monkeypatch, capsys)
    assert code == 2
    assert stderr.count("\n") == 1 and stderr.startswith("ragbench: error: ") and message in stderr
    assert not out.exists()


def test_ceiling_file_without_ceiling_points_is_refused(tmp_path, monkeypatch, capsys):
    bogus = tmp_path / "results.jsonl"
    bogus.write_text(
        json.dumps(
            {
                "record": "run",
                "schema": "ragbench.results",
                "version": 2,
                "command": "load",
                "created": "",
                "ragbench_version": "",
                "dataset": {},
                "measures": [],
                "measure_labels": {},
                "depth": 0,
                "seed": 0,
                "targets": [],
            }
        )
        + "\n"
    )
    code, _, stderr = run_cli(
        [
            "size",
            "-e",
            "x=tei@http://127.0.0.1:9",
            "--slo-p99",
            "5",
            "--ceiling",
            str(bogus),
            "--out",
            str(tmp_path / "o"),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 2 and "no ceiling_point records" in stderr


def test_a_server_refusing_every_measured_request_exits_3(load_server, tmp_path, monkeypatch, capsys):
    """The preflight passes, then every request is refused: the points are named as failed and size says so."""
    url, _ = load_server(service_ms=1, overload_s=600, overload_status=500)
    out = tmp_path / "size"
    code, stdout, stderr = run_cli(
        [
            "size",
            "-e",
            f"t=tei@{url}",
            "--slo-p99",
            "100",
            "--batch",
            "1",
            "--max-concurrency",
            "1",
            "--duration",
            "0.3s",
            "--warmup",
            "0s",
            "--burst",
            "4",
            "--burst-batch",
            "1",
            "--burst-concurrency",
            "1",
            "--no-nvml",
            "--out",
            str(out),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 3, stderr
    error = stderr.strip().splitlines()[-1]  # after size's progress lines
    assert error.startswith("ragbench: error: 2 of 2 load points measured nothing or had no successful request: ")
    assert (
        "t embed closed batch 1 conc 1 len 128: no request succeeded" in error and stderr.count("ragbench: error") == 1
    )
    assert "t embed burst 4 texts batch 1 conc 1 len 128: no request succeeded" in error
    results = read_results(out / "results.jsonl")
    assert all(p.status == "failed" for p in results.load_points) and results.end.status == "complete"
    assert "report: " in stdout  # everything written before the error line


@pytest.mark.slow  # a measured load of seconds by design
def test_a_server_dying_mid_search_exits_3_with_every_finished_point(load_server, tmp_path, monkeypatch, capsys):
    """The server answers the first point, then dies: sizing stops, what it measured is written, exit 3 (it ran, a
    measurement failed), never 2 (a user error)."""
    from bench.commands.size import SizeRequest, run_size
    from bench.core.errors import EXIT_MEASUREMENT_FAILED, MeasurementFailed

    url, proc = load_server(service_ms=1)
    out = tmp_path / "size"

    def kill_after_first(point) -> None:
        if proc.popen.poll() is None:
            proc.popen.kill()
            proc.popen.wait()

    request = SizeRequest(
        endpoints=[f"t=tei@{url}"],
        slo_p99_ms=100,
        out=out,
        batches="1",
        max_concurrency=4,
        duration="0.3s",
        warmup="0s",
        nvml=False,
        timeout="2s",
    )
    with pytest.raises(MeasurementFailed, match="no answer at all during closed batch 1 conc 2") as failed:
        run_size(request, kill_after_first)
    assert failed.value.exit_code == EXIT_MEASUREMENT_FAILED
    results = read_results(out / "results.jsonl")
    assert [p.requests.ok > 0 for p in results.load_points] == [True, False]
    assert results.end.status == "failed" and "no answer at all" in results.end.error


def test_slo_on_another_percentile_and_a_target_in_texts(load_server, tmp_path, monkeypatch, capsys):
    """`--slo p95=100ms` sizes on the p95 (the record and the report say so); `--target-texts-per-s` gives replicas
    in texts/s; a probe verdict names its requests."""
    url, _ = load_server(service_ms=1)
    out = tmp_path / "size"
    code, stdout, stderr = run_cli(
        [
            "size",
            "-e",
            f"t=tei@{url}",
            "--slo",
            "p95=100ms",
            "--batch",
            "4",
            "--max-concurrency",
            "2",
            "--duration",
            "0.3s",
            "--warmup",
            "0s",
            # Timing (issue 37): 3 probes (×1, ×2, ×4 of half the closed loop's best rate) reach twice what the
            # closed loop carried, which the 2 cores do not beside CPU-bound neighbours (one run failed at 580/s).
            # Two probes (the fewest taken), at half that rate (bench.sizing.plan.START_FRACTION) and at that rate:
            # no higher than what the closed loop just carried.
            "--max-probes",
            "2",
            "--probe-requests",
            "20",
            "--arrival",  # no queue under capacity: 20-request probes judged as such (steady.py is Poisson's)
            "constant",
            "--burst",
            "4",
            "--burst-batch",
            "4",
            "--burst-concurrency",
            "1",
            "--target-texts-per-s",
            "1e6",
            "--no-nvml",
            "--out",
            str(out),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 0, stderr
    (sizing,) = read_results(out / "results.jsonl").sizing
    assert (sizing.slo_percentile, sizing.slo_p99_ms, sizing.stopped) == (95.0, 100.0, None)
    by = {line.setting: line for line in sizing.lines}
    offered = by["saturation rate (goodput, offered)"]
    assert "scheduled p95" in offered.why and " requests (95% interval" in offered.why
    rate = float(offered.value.split()[-2].replace(",", ""))
    replicas = by["replicas for --target-texts-per-s"]
    assert "texts/s offered per replica at the SLO (batch 4)" in replicas.why
    # Both probes, at most what the closed loop just carried, pass: a lower bound, so at most that many replicas
    assert sizing.saturation.lower_bound == "no failing rate found within the probe limit"
    assert [p.passed for p in sizing.saturation.probes] == [True, True], sizing.saturation
    low, high = (p.rate for p in sizing.saturation.probes)
    assert high == 2 * low and rate == pytest.approx(high, rel=5e-3), sizing.saturation  # rate: 3 digits
    assert replicas.value.startswith("≤ ") and int(replicas.value[2:]) >= 1e6 / (rate * 4 * 1.01)  # rate: 3 digits
    assert "p95 SLO 100 ms" in stdout and "SLO p95 100 ms" in (out / "report.md").read_text()


@pytest.mark.slow  # a measured sweep and search of a 15 s budget by design
def test_size_sweeps_rerank_documents_drawn_from_a_distribution(load_server, tmp_path, monkeypatch, capsys):
    """`--documents poisson:4,2..6,4`: each drawn distribution is a closed-loop size of its own (not its mean's fixed
    size), its points record the draw, and the saturation search probes one size of them (the one it chose)."""
    url, _proc = load_server(service_ms=2)
    out = tmp_path / "size"
    argv = ["size", "-e", f"r=tei-rerank@{url}", "--slo-p99", "500", "--documents", "poisson:4,2..6,4"]
    argv += ["--max-concurrency", "1", "--duration", "0.3s", "--warmup", "0.1s", "--max-time", "15s", "--no-nvml"]
    code, _stdout, stderr = run_cli([*argv, "--out", str(out)], monkeypatch, capsys)
    assert code == 0, stderr
    points = read_results(out / "results.jsonl").load_points
    closed = [p for p in points if p.loop.value == "closed"]
    assert [p.size_text for p in closed] == ["poisson:4", "2..6", "4"]
    assert [p.documents_distribution is not None for p in closed] == [True, True, False]
    assert all(p.batch == 4 for p in closed)  # a draw's batch is its rounded mean
    probes = [p for p in points if p.loop.value == "open"]
    assert probes and len({p.size_text for p in probes}) == 1 and probes[0].size_text in {"poisson:4", "2..6", "4"}


def test_size_refuses_a_bad_documents_distribution_in_one_line(tmp_path, monkeypatch, capsys):
    argv = ["size", "-e", "r=tei-rerank@http://127.0.0.1:9", "--slo-p99", "500", "--documents", "poisson:x"]
    code, _stdout, stderr = run_cli([*argv, "--out", str(tmp_path / "size")], monkeypatch, capsys)
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "--documents poisson:x" in lines[0], stderr


def test_a_budget_spent_before_any_probe_exits_3(load_server, tmp_path, monkeypatch, capsys):
    """--max-time 1s ends before the first probe's window: nothing was sized, which is a measurement that failed
    (exit 3, docs/exit-codes.md), not the 0 of a budget that answered (issue 50's hostile pass: it exited 0)."""
    url, _ = load_server(service_ms=1)
    argv = ["size", "-e", f"t=tei@{url}", "--slo-p99", "100", "--batch", "1", "--max-concurrency", "1"]
    code, stdout, stderr = run_cli(
        [*argv, "--no-nvml", "--max-time", "1s", "--out", str(tmp_path / "size")], monkeypatch, capsys
    )
    assert code == 3, (stdout, stderr)
    assert "ended before any probe was measured: nothing sized" in stderr, stderr
    assert (tmp_path / "size" / "results.jsonl").exists()
