"""`load --trace` stopped by SIGTERM / Ctrl-C writes what it sent (trace-replay.json, the report), then exits 143 /
130; a replay where no call was answered exits 3 (issue 50: a stop wrote nothing, and all-failed exited 1)."""

from __future__ import annotations

import json
import re
import signal
import sys
from pathlib import Path

import pytest

from tests.harness.cli import run_cli_captured, signal_when_printed

SENDING = re.compile("sending")
SENDING_S = 120  # the "sending" line on a busy 2-core runner: workers spawned, the endpoint's preflight answered
AFTER_SENDING_S = 3.0  # sends for this long before the signal: some of the trace's 60 s sent, most not
CALLS, GAP_S = 1200, 0.05  # a 60 s trace: the signal always lands inside it


def gateway_trace(path: Path, calls: int, gap_s: float) -> Path:
    rows = [f"{i * gap_s:.3f},embedding,embed,1,chars,40,,200,0.01" for i in range(calls)]
    path.write_text("at,route,kind,texts,unit,lengths,query,status,latency\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.slow  # a subprocess stopped by a signal mid-replay
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_mid_replay_writes_what_was_sent(load_server, tmp_path: Path, signum: int, status: int):
    url, _ = load_server(service_ms=2)
    trace = gateway_trace(tmp_path / "gateway.csv", CALLS, GAP_S)
    out = tmp_path / "replay"
    argv = [sys.executable, "-m", "bench", "load", "-e", f"fx=tei@{url}", "--trace", str(trace)]
    argv += ["--route", "embedding=fx", "--out", str(out)]
    code, stdout, stderr = signal_when_printed(argv, SENDING, SENDING_S, signum, AFTER_SENDING_S)
    assert code == status, (stdout + stderr)[-800:]
    (route,) = json.loads((out / "trace-replay.json").read_text())["routes"]
    assert 0 < route["calls_replayed"] < CALLS and (out / "report.html").exists()


@pytest.mark.slow  # a real replay against a server that refuses every call after the preflight
def test_a_replay_where_no_call_was_answered_exits_3(load_server, tmp_path: Path):
    url, _ = load_server(service_ms=1, overload_s=600, overload_from=1)  # every embed a 429 (its /info answered)
    trace = gateway_trace(tmp_path / "gateway.csv", 20, 0.01)
    code, stdout, stderr = run_cli_captured(
        "load", "-e", f"fx=tei@{url}", "--trace", str(trace), "--route", "embedding=fx", "--out", str(tmp_path / "o")
    )
    assert code == 3, stdout + stderr
    assert "no call of the replay was answered" in stderr
    (route,) = json.loads((tmp_path / "o" / "trace-replay.json").read_text())["routes"]
    assert route["errors"] == route["calls_replayed"] == 20
