"""Latency histograms: HDR (HdrHistogram_py), in microseconds, merged exactly across workers.

Workers keep raw values in flat arrays while a point runs (an append costs ~0.25 µs here; an HDR
`record_value` in Python 3-5 µs, three of which per request would eat a sixth of a core at 15,000
requests/s) and fold them into a histogram after the point. A histogram travels between processes as HDR's own
compressed base64 encoding and is added with `decode_and_add`, so merging loses nothing.
"""

from __future__ import annotations

from array import array

from hdrh.histogram import HdrHistogram

from bench.results.schema import LatencySummary

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour: any answer slower than that is a timeout anyway
SIGNIFICANT_DIGITS = 3  # values kept to 0.1%


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def from_values(values_us: array[int] | array[float]) -> HdrHistogram:
    histogram = new_histogram()
    for value in values_us:
        histogram.record_value(min(max(int(value), LOWEST_US), HIGHEST_US))
    return histogram


def encode(histogram: HdrHistogram) -> str:
    encoded: bytes = histogram.encode()
    return encoded.decode("ascii")


def decode(encoded: str) -> HdrHistogram:
    histogram = new_histogram()
    histogram.decode_and_add(encoded.encode("ascii"))
    return histogram


def merge(encoded: list[str | None]) -> HdrHistogram:
    """One histogram from several workers' encodings (None: that worker recorded nothing)."""
    histogram = new_histogram()
    for item in encoded:
        if item:
            histogram.decode_and_add(item.encode("ascii"))
    return histogram


def summary_ms(histogram: HdrHistogram) -> LatencySummary | None:
    """The quantiles, max and mean in milliseconds, and the count; None when nothing was recorded."""
    count = histogram.get_total_count()
    if not count:
        return None

    def at(percentile: float) -> float:
        return float(histogram.get_value_at_percentile(percentile)) / 1000.0

    return LatencySummary(
        p50=at(50.0),
        p90=at(90.0),
        p99=at(99.0),
        p999=at(99.9),
        max=histogram.get_max_value() / 1000.0,
        mean=histogram.get_mean_value() / 1000.0,
        count=count,
    )


def cdf_ms(histogram: HdrHistogram) -> list[tuple[float, float]]:
    """(latency ms, fraction of requests at or below it) at every recorded value, for CDF plots."""
    total = histogram.get_total_count()
    points: list[tuple[float, float]] = []
    seen = 0
    for item in histogram.get_recorded_iterator():
        seen += item.count_added_in_this_iter_step
        points.append((histogram.get_highest_equivalent_value(item.value_iterated_to) / 1000.0, seen / total))
    return points
