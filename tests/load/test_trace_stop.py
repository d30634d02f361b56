"""`size --trace` stopped by SIGTERM or Ctrl-C: `--out` holds the results file with the best so far (the probes
that finished, `stopped` saying why), its `end` record, the report and trace-size.json; exit 143 / 130 (issue 45:
after 20 minutes a signal left no --out at all)."""

from __future__ import annotations

import re
import signal
import sys
from pathlib import Path

import pytest

from bench.results.store import read_results
from tests.harness.cli import signal_when_printed

FIRST_VERDICT = re.compile(r"× 1: .*\b(pass|fail)")  # the first probe's verdict line
FIRST_VERDICT_S = 120  # the first probe's line on a busy 2-core runner: workers spawned, 5 s replayed


@pytest.mark.slow  # a subprocess stopped by a signal after its first probe
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_leaves_the_best_so_far(load_server, tmp_path: Path, signum: int, status: int):
    url, _ = load_server(service_ms=10, serial=1)  # 100 calls/s; the trace's 40/s fits up to ×2.5
    trace = tmp_path / "gateway.csv"
    rows = [f"{i * 0.025:.3f},embedding,embed,1,chars,40,,200,0.01" for i in range(100)]
    trace.write_text("at,route,kind,texts,unit,lengths,query,status,latency\n" + "\n".join(rows) + "\n")
    out = tmp_path / "size"
    argv = [sys.executable, "-m", "bench", "size", "-e", f"fx=tei@{url}", "--trace", str(trace)]
    argv += ["--route", "embedding=fx", "--slo-p99", "1000", "--out", str(out)]
    code, stdout, stderr = signal_when_printed(argv, FIRST_VERDICT, FIRST_VERDICT_S, signum)
    assert code == status, (stdout + stderr)[-800:]
    results = read_results(out / "results.jsonl")
    (record,) = results.of("trace_size")
    assert record.stopped == f"stopped by {signal.Signals(signum).name}"
    assert record.probes and record.probes[0].speed == 1.0 and record.max_speed is not None
    assert results.end is not None and results.end.status == "interrupted"
    assert (out / "report.html").exists() and (out / "trace-size.json").exists()
    assert "best so far" in (out / "report.md").read_text()
