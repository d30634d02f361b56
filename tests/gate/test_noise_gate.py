"""Gates that know the noise (bench/gate/noise.py, bench/core/resample.py): the interval arithmetic and the
verdicts, then `compare` on repeated load points in every output."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from bench.core.resample import Interval, mean_interval, ratio_interval, seeded_generator
from bench.gate import noise
from bench.load.repeats import intervals, pooled
from bench.results.schema import PointIntervals, PointRepeat
from bench.results.store import read_results
from bench.results.writer import record_line
from tests.gate.helpers import load_point, write_load_results


def rng(name: str = "t") -> np.random.Generator:
    return seeded_generator(0, name)


def test_intervals_are_deterministic_and_hold_the_mean():
    values = [101.0, 97.0, 103.0, 99.0, 100.0]
    a, b = mean_interval(values, rng()), mean_interval(values, rng())
    assert a == b  # the same seed and names: the same interval, bit for bit
    assert a.low < a.mean < a.high and a.mean == pytest.approx(100.0)
    assert a.low >= 97.0 and a.high <= 103.0  # a resampled mean never leaves the values' range


def test_ratio_interval_resamples_each_side_and_covers_the_true_ratio():
    """Repeats drawn around 100 and 80 texts/s with 3% noise: the interval of the ratio of means holds 0.8
    in about 95% of 200 simulated comparisons (percentile bootstrap, 5 repeats a side: somewhat less)."""
    draws = np.random.default_rng(1)
    covered = 0
    for i in range(200):
        base, cur = draws.normal(100, 3, 5), draws.normal(80, 2.4, 5)
        r = ratio_interval(base, cur, seeded_generator(0, str(i)), 2000)
        assert r is not None and r.mean == pytest.approx(cur.mean() / base.mean())
        covered += r.low <= 0.8 <= r.high
    assert 0.8 <= covered / 200 <= 1.0
    assert ratio_interval([0.0, 0.0], [1.0, 2.0], rng()) is None  # no baseline throughput: no ratio


@pytest.mark.parametrize(
    "interval, limit, higher_is_better, expected",
    [
        (Interval(0.80, 0.78, 0.82), 0.95, True, noise.Verdict.FAIL),  # all below the minimum ratio
        (Interval(1.00, 0.97, 1.03), 0.95, True, noise.Verdict.PASS),  # all above it
        (Interval(0.96, 0.90, 1.02), 0.95, True, noise.Verdict.INCONCLUSIVE),  # straddles it
        (Interval(1.30, 1.20, 1.40), 1.10, False, noise.Verdict.FAIL),  # p99 up 20–40% against a 10% limit
        (Interval(1.02, 0.98, 1.06), 1.10, False, noise.Verdict.PASS),
        (Interval(1.08, 1.01, 1.15), 1.10, False, noise.Verdict.INCONCLUSIVE),
    ],
)
def test_judge_fails_only_past_the_whole_interval(interval, limit, higher_is_better, expected):
    assert noise.judge(interval, limit, higher_is_better) == expected


def test_repeats_for_power_tell_the_limits_step_at_80_percent_and_scale_with_the_square_of_the_width():
    """Issue 45: the repeats a side whose interval tells the limit's step (5% at x0.95) from none 80% of the time:
    its half-width (log units) must come down to step x 1.96 / 2.80."""
    step = math.log(1 / 0.95)
    enough = step * noise.Z_CONFIDENCE / noise.Z_POWER  # the half-width that tells the step at 80% power

    def interval(half: float) -> Interval:
        return Interval(1.0, math.exp(-half), math.exp(half))

    assert noise.repeats_for_power(interval(enough * 0.999), 0.95, 5) == 5
    assert noise.repeats_for_power(interval(enough * 2), 0.95, 5) == 20  # twice as wide: four times the repeats
    assert noise.repeats_for_power(Interval(0.97, 0.91, 1.03), 0.95, 5) == 15
    assert noise.repeats_for_power(Interval(1.0, 1.0, 1.0), 0.95, 5) is None  # no width to scale


def test_an_inconclusive_verdict_says_the_noise_the_target_and_the_repeats():
    base, cur = [100.0, 108.0, 93.0, 104.0, 96.0], [97.0, 104.0, 91.0, 101.0, 93.0]
    v = noise.verdict("throughput", base, cur, 0.95, True, rng(), 4000)
    assert v is not None and v.verdict == noise.Verdict.INCONCLUSIVE
    message = v.message()
    assert f"A/A spread ±{v.spread:.1%}" in message and "wider than the 5% you ask to detect" in message
    assert f"{v.needed} repeats a side would tell a 5% step from none (80% power, at this spread)" in message
    assert v.needed > 5
    assert (
        noise.verdict("throughput", base, [x * 0.75 for x in cur], 0.95, True, rng(), 4000).verdict
        == noise.Verdict.FAIL
    )
    assert (
        noise.verdict("p99", [20.0, 21.0, 19.0], [20.5, 20.0, 19.5], 1.10, False, rng(), 4000).verdict
        == noise.Verdict.PASS
    )


def repeated(texts: list[float], p99: list[float] | None = None):
    """A load point pooled from repeats with these texts/s (and service p99), as `load --repeat` writes it."""
    p99 = p99 or [20.0] * len(texts)
    points = [load_point(texts_per_s=t, p99_ms=p, latencies_us=[int(p * 1000)] * 100) for t, p in zip(texts, p99)]
    return pooled(points, seed=0, resamples=2000)


def test_a_pooled_point_keeps_its_repeats_and_their_intervals():
    point = repeated([1000.0, 1040.0, 960.0], [20.0, 24.0, 22.0])
    assert [r.throughput.texts_per_s for r in point.repeats] == [1000.0, 1040.0, 960.0]
    assert point.requests.sent == 300 and point.duration_s == 30.0
    assert point.throughput.texts_per_s == pytest.approx(1000.0)  # rates over the summed windows
    assert point.intervals is not None and point.intervals.latency_ms.service is not None
    tput = point.intervals.throughput.texts_per_s
    assert tput.low < tput.mean < tput.high and tput.mean == pytest.approx(1000.0)
    assert point.intervals.latency_ms.service.p99.mean == pytest.approx(22.0)
    assert point.intervals.resamples == 2000 and point.intervals.repeats == 3
    assert intervals(point.repeats, seeded_generator(0, "x"), 2000).throughput.texts_per_s.mean == tput.mean


def test_a_pooled_point_reads_back_as_written(tmp_path):
    """The typed repeats and intervals go through the results file and come back as written (NaN, no tokens/s,
    is not equal to itself: compared as lines); a point measured once is written without them."""
    point = repeated([1000.0, 1040.0, 960.0], [20.0, 24.0, 22.0])
    once = load_point(concurrency=2, texts_per_s=990.0)
    path = write_load_results(tmp_path / "run", [point, once])
    read = read_results(path).load_points
    assert isinstance(read[0].repeats[0], PointRepeat) and isinstance(read[0].intervals, PointIntervals)
    assert record_line(read[0]) == record_line(point) and read[0].intervals == point.intervals
    assert read[1].repeats == [] and read[1].intervals is None
    line = next(x for x in path.read_text().splitlines() if '"load_point"' in x and '"repeats"' not in x)
    assert '"intervals"' not in line


NOISY = [1000.0, 1080.0, 930.0, 1040.0, 960.0]  # ±8%: wider than a 5% gate


@pytest.mark.parametrize(
    "current, policy, code, mark",
    [
        ([t * 0.99 for t in NOISY[::-1]], "pass", 0, "inconclusive"),
        ([t * 0.99 for t in NOISY[::-1]], "fail", 1, "inconclusive"),
        ([t * 0.70 for t in NOISY], "pass", 1, "fail"),
    ],
)
def test_compare_on_repeats_says_its_verdict_in_every_output(tmp_path, compare, current, policy, code, mark):
    base = write_load_results(tmp_path / "base", [repeated(NOISY)])
    cur = write_load_results(tmp_path / "cur", [repeated(current)])
    outputs = ["--junit", tmp_path / "j.xml", "--summary", tmp_path / "s.md"]
    got, out, _ = compare(base, cur, "--min-throughput-ratio", "0.95", "--inconclusive", policy, *outputs)
    assert got == code, out
    assert "gate ignores noise" not in out
    junit = ET.parse(tmp_path / "j.xml").getroot()
    summary = (tmp_path / "s.md").read_text()
    as_json = json.loads(
        compare(base, cur, "--min-throughput-ratio", "0.95", "--inconclusive", policy, "--format", "json")[1]
    )
    (check,) = as_json["checks"]
    if mark == "inconclusive":
        said = f"INCONCLUSIVE, counted as {policy} (--inconclusive {policy})"
        assert "inconclusive: this runner's noise (A/A spread ±" in out and said in out
        assert f"1 INCONCLUSIVE (the runner's noise is wider than the change gated; counted as {policy}" in out
        assert f"**Inconclusive (1 of 1 checks, {said}):**" in summary
        assert junit.find(".//testcase/properties/property[@name='inconclusive']").get("value") == said
        assert (junit.find(".//failure") is not None) == (policy == "fail")
        assert check["inconclusive"] == said and as_json["inconclusive"] == {"checks": 1, "counted_as": policy}
        assert check["figures"]["noise"][0]["verdict"] == "inconclusive"
    else:
        assert "the whole interval is past the limit ×0.95" in out and "INCONCLUSIVE" not in out
        assert junit.find(".//failure").get("type") == "regression"
        assert check["figures"]["noise"][0]["verdict"] == "fail" and as_json["inconclusive"]["checks"] == 0


def test_without_repeats_on_both_sides_the_gate_is_as_before_and_says_it_ignores_noise(tmp_path, compare):
    base = write_load_results(tmp_path / "base", [repeated(NOISY)])
    cur = write_load_results(tmp_path / "cur", [load_point(texts_per_s=940.0)])  # measured once
    code, out, _ = compare(base, cur, "--min-throughput-ratio", "0.95")
    # the pooled baseline (1002 texts/s) against one run: ×0.938 < 0.95 fails, noise or not
    assert code == 1 and "(×0.938)" in out
    assert "!! 1 load point(s) gated on one run against one run: the gate ignores noise" in out
    code, out, _ = compare(base, cur)  # nothing gated on throughput: nothing to warn about
    assert code == 0 and "ignores noise" not in out


def test_a_noise_floor_is_the_runs_spread_of_a_ratio_in_log_units():
    """Five runs of one figure: the floor is t(4) x sqrt(2) x their standard deviation of log(figure), so it
    does not depend on the unit (texts/s or x1000) and is 0 when the runs agree exactly."""
    figures = [100.0, 110.0, 92.0, 104.0, 97.0]
    floor = noise.noise_floor(figures, repeats=5)
    scaled = noise.noise_floor([f * 1000 for f in figures], repeats=5)
    assert floor is not None and scaled is not None
    assert floor.half_width == pytest.approx(scaled.half_width) and floor.runs == 5 and floor.repeats == 5
    sd = np.std(np.log(figures), ddof=1)
    assert floor.half_width == pytest.approx(2.776445 * np.sqrt(2) * sd, rel=1e-5)  # t(0.975, 4) = 2.776445
    assert noise.noise_floor([100.0, 100.0, 100.0], 1).half_width == 0.0
    assert noise.noise_floor([100.0], 1) is None and noise.noise_floor([100.0, 0.0, float("nan")], 1) is None


def simulated_run(draws: np.random.Generator, speed: float, between: float, within: float) -> list[float]:
    """Five repeats of one point on a runner whose state moves between runs (lognormal, `between`) more than
    within one (`within`): what this machine showed (docs/ci.md)."""
    state = speed * np.exp(draws.normal(0, between))
    return list(state * np.exp(draws.normal(0, within, 5)))


def test_a_calibrated_floor_keeps_aa_comparisons_from_failing_where_the_repeats_alone_do():
    """200 A/A comparisons on a runner with 4% noise between runs and 1% within: the repeats' interval alone
    (±~1.5%) calls many of them regressions against a 0.95 gate; with the floor from 10 calibration runs, about
    the 2.5% a one-sided 95% interval allows. A true 25% slowdown still fails nearly always (at this noise:
    with more, the floor is wider and the gate loses power honestly rather than crying wolf)."""
    draws = np.random.default_rng(7)
    calibration = [float(np.mean(simulated_run(draws, 100, 0.04, 0.01))) for _ in range(10)]
    floor = noise.noise_floor(calibration, repeats=5)
    assert floor is not None

    def failures(slowdown: float, with_floor: bool) -> int:
        found = 0
        for i in range(200):
            base, cur = simulated_run(draws, 100, 0.04, 0.01), simulated_run(draws, 100 * slowdown, 0.04, 0.01)
            v = noise.verdict("throughput", base, cur, 0.95, True, rng(str(i)), 1000, floor if with_floor else None)
            found += v is not None and v.verdict == noise.Verdict.FAIL
        return found

    assert failures(1.0, with_floor=False) > 15  # the repeats cannot see the noise between runs
    assert failures(1.0, with_floor=True) <= 12
    assert failures(0.75, with_floor=True) >= 180


def test_an_inconclusive_verdict_set_by_the_floor_says_repeats_would_not_help():
    floor = noise.NoiseFloor(half_width=0.10, runs=8, repeats=5)
    v = noise.verdict("throughput", [100.0, 101.0, 99.0], [97.0, 98.0, 96.0], 0.95, True, rng(), 2000, floor)
    assert v is not None and v.verdict == noise.Verdict.INCONCLUSIVE and v.between_runs and v.needed is None
    assert v.ratio.low == pytest.approx(0.97 * np.exp(-0.10)) and v.ratio.high == pytest.approx(0.97 * np.exp(0.10))
    assert "calibrated over 8 A/A runs of 5 repeats" in v.message()
    assert "more repeats would not resolve it (the noise is between runs)" in v.message()
    # issue 50: 'runner noise ±16.9%' and 'A/A spread ±15.7%' for one noise in one sentence: one name, one figure
    said = v.message()
    assert "A/A spread" not in said and said.count(f"runner noise between runs ±{floor.spread:.1%}") == 1, said
    assert f"inconclusive: the runner noise between runs (±{floor.spread:.1%}) is wider" in said, said
    assert v.to_dict()["calibration"] == {
        "spread": pytest.approx(np.expm1(0.10)),
        "runs": 8,
        "repeats": 5,
        "loose": None,
    }


def test_compare_with_calibration_widens_the_gate_by_the_runners_noise(tmp_path, compare):
    """A 12% drop that the repeats alone call a regression is inconclusive once five A/A runs show this
    runner moves about ±8% from run to run (a ±30% floor from five runs); a point the calibration runs did not
    measure is gated one run against one and said; calibration inputs are checked like compare's own."""
    quiet = [1000.0, 1010.0, 990.0]
    base = write_load_results(tmp_path / "base", [repeated(quiet), load_point(concurrency=2, texts_per_s=500.0)])
    cur = write_load_results(
        tmp_path / "cur", [repeated([t * 0.88 for t in quiet]), load_point(concurrency=2, texts_per_s=300.0)]
    )
    runs = [
        write_load_results(tmp_path / f"aa{i}", [repeated([t * s for t in quiet])])
        for i, s in enumerate([1.01, 1.1, 0.9, 1.05, 0.93])  # 1.0 would be the baseline's point again: a copy
    ]
    code, out, _ = compare(base, cur, "--min-throughput-ratio", "0.95")
    assert code == 1 and "the whole interval is past the limit" in out  # the repeats alone: a regression
    calibrated = [x for r in runs for x in ("--calibration", r)]
    code, out, _ = compare(base, cur, "--min-throughput-ratio", "0.95", *calibrated, "--format", "json")
    as_json = json.loads(out)
    first, second = as_json["checks"]
    (v,) = first["figures"]["noise"]
    assert v["verdict"] == "inconclusive" and v["calibration"]["runs"] == 5 and v["calibration"]["repeats"] == 3
    assert "more repeats would not resolve it" in v["message"]
    assert second["status"] == "fail" and "noise" not in second["figures"]  # ×0.6, gated one run against one
    assert any("no calibration for load point(s)" in n for n in as_json["notes"])
    assert code == 1  # the uncalibrated point's 40% drop
    code, _, err = compare(base, cur, "--min-throughput-ratio", "0.95", "--calibration", runs[0])
    assert code == 2 and "--calibration: give two A/A runs at least" in err
    code, _, err = compare(base, cur, "--min-throughput-ratio", "0.95", *calibrated, "--junit", runs[0])
    assert code == 2


def test_points_measured_once_are_judged_by_the_floor_alone_when_calibrated():
    base, cur = load_point(texts_per_s=1000.0), load_point(texts_per_s=900.0)
    limits = {"throughput": 0.95, "p99": None}
    assert noise.point_verdicts(base, cur, "service", limits, 0, "p", {}) is None  # one run against one
    floor = noise.NoiseFloor(half_width=0.03, runs=6, repeats=1)
    (v,) = noise.point_verdicts(base, cur, "service", limits, 0, "p", {"throughput": floor})
    assert v.verdict == noise.Verdict.FAIL and v.repeats == (1, 1)
    assert v.ratio.high == pytest.approx(0.9 * np.exp(0.03))
