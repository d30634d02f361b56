"""Issue 45, compare: a p99 limit keeps the repeats' intervals; an inconclusive verdict whose change is past the
limit and significant says so in the first line; what would decide an inconclusive verdict is said."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import numpy as np
import pytest

from bench.load.repeats import pooled
from bench.results.schema import Latencies, LatencySummary
from tests.gate.helpers import load_point, write_load_results
from tests.harness.cli import run_cli
from tests.history.helpers import write_load_run

ANSWERS = 60  # per repeat: fewer than the 100 a p99 needs, as in a short `load --repeat 3`


@pytest.fixture
def compare(monkeypatch, capsys):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return lambda *args: run_cli(["compare", *map(str, args)], monkeypatch, capsys)


def _short_repeat(texts_per_s: float, p99_ms: float, seed: int):
    """A repeat of ANSWERS answers spread up to `p99_ms`: too few for its own p99 (None, as `load` writes it)."""
    draw = random.Random(seed)
    latencies = [int(draw.uniform(0.25, 1.0) * p99_ms * 1000) for _ in range(ANSWERS)]
    point = load_point(texts_per_s=texts_per_s, latencies_us=latencies, sent=ANSWERS)
    block = LatencySummary(p99_ms / 2, p99_ms * 0.9, None, None, p99_ms, p99_ms / 2, ANSWERS)
    return replace(point, latency_ms=Latencies(service=block))


def _repeated_run(folder, texts: list[float], p99_ms: float, seed: int):
    repeats = [_short_repeat(t, p99_ms, seed + i) for i, t in enumerate(texts)]
    return write_load_results(folder, [pooled(repeats, seed=0, resamples=500)])


LIMITS = ("--min-throughput-ratio", "0.95", "--max-p99-increase", "10%")


def test_a_p99_limit_keeps_the_repeats_intervals_where_each_repeat_is_too_short_for_its_own_p99(tmp_path, compare):
    base = _repeated_run(tmp_path / "base", [1000.0, 1010.0, 990.0], 20.0, seed=0)
    same = _repeated_run(tmp_path / "same", [1000.0, 1005.0, 995.0], 20.0, seed=10)
    code, out, _ = compare(base, same, *LIMITS)
    assert code == 0 and "one run against one run" not in out
    assert "throughput ×1.000 [" in out and "over 3+3 repeats' 180+180 answers pooled" in out
    later = _repeated_run(tmp_path / "later", [1000.0, 1005.0, 995.0], 30.0, seed=20)  # p99 x1.5
    code, out, _ = compare(base, later, *LIMITS, "--format", "json")
    (check,) = json.loads(out)["checks"]
    verdicts = {v["figure"]: v for v in check["figures"]["noise"]}
    assert code == 1 and verdicts["p99"]["verdict"] == "fail" and verdicts["throughput"]["verdict"] == "pass"
    assert verdicts["p99"]["pooled_answers"] == [180, 180]


def _history(folder, runs: int = 10, sd_log: float = 0.047) -> None:
    """`runs` A/A runs of one point whose texts/s spread exactly `sd_log` in log units (t(9) x sqrt(2) x 0.047:
    a floor of ±16%)."""
    z = np.linspace(-1.0, 1.0, runs)
    z = (z - z.mean()) / z.std(ddof=1)
    for run, step in enumerate(z):
        write_load_run(folder / f"run{run:03d}", run, {8: 1000.0 * float(np.exp(sd_log * step))})


def test_a_significant_drop_past_the_limit_that_the_history_leaves_inconclusive_says_so_first(tmp_path, compare):
    _history(tmp_path / "history")
    base = write_load_run(tmp_path / "base", 20, {8: 1000.0})
    cur = write_load_run(tmp_path / "cur", 21, {8: 841.0})
    args = (base, cur, "--min-throughput-ratio", "0.95", "--history", tmp_path / "history")
    code, out, _ = compare(*args, "--format", "json")
    (v,) = json.loads(out)["checks"][0]["figures"]["noise"]
    ratio = v["ratio"]
    assert ratio["low"] < 0.95 and ratio["high"] < 1.0 and v["verdict"] == "inconclusive"  # as in the issue
    assert v["likely_regression"] and json.loads(out)["likely_regressions"] == 1
    code, out, _ = compare(*args)
    first = out.splitlines()[0]
    assert code == 0 and first.startswith("ragbench compare: INCONCLUSIVE — likely regression: load: tei embed")
    assert f"×0.841 [{ratio['low']:.3f}, {ratio['high']:.3f}] is past the limit ×0.95 and excludes no change" in first
    assert "counted as pass" in first
    runs = v["needed_runs"]
    assert runs is not None and runs > 1
    assert f"{runs} runs of each build would tell a 5% step from none (80% power, at this spread)" in out
    assert compare(*args, "--inconclusive", "fail")[0] == 1  # the exit code stays the user's choice
    summary = compare(*args, "--format", "md")[1].splitlines()[0]
    assert summary.startswith("## ragbench compare: ⚠️ INCONCLUSIVE — likely regression: ")


def test_an_inconclusive_ratio_whose_interval_holds_no_change_is_not_called_likely(tmp_path, compare):
    _history(tmp_path / "history")
    base = write_load_run(tmp_path / "base", 20, {8: 1000.0})
    cur = write_load_run(tmp_path / "cur", 21, {8: 940.0})  # x0.94: past x0.95, its interval holds 1
    code, out, _ = compare(base, cur, "--min-throughput-ratio", "0.95", "--history", tmp_path / "history")
    assert code == 0 and out.startswith("ragbench compare: pass (") and "likely regression" not in out
    assert "INCONCLUSIVE, counted as pass" in out
