"""Latency histograms: HDR (HdrHistogram_py), in microseconds, merged exactly across workers.

Workers keep raw values in flat arrays while a point runs (an append costs ~0.25 µs here; an HDR
`record_value` in Python 3-5 µs, three of which per request would eat a sixth of a core at 15,000
requests/s) and fold them into a histogram after the point. A histogram travels between processes as HDR's own
compressed base64 encoding and is added with `decode_and_add`, so merging loses nothing.

Quantiles, mean and CDF are read from the counts array with numpy: HdrHistogram_py's own readers walk every
bucket index up to the largest value in Python (1-3 s per point's six histograms on busy cores, more than
some points' measured window). The values are HDR's own, bucket for bucket (tests/load/test_units.py).
"""

from __future__ import annotations

from array import array

import numpy as np
from hdrh.histogram import HdrHistogram

from bench.results.schema import LatencySummary

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour: any answer slower than that is a timeout anyway
SIGNIFICANT_DIGITS = 3  # values kept to 0.1%
# The one rule for every quantile ragbench reports: the values it must rest on. Below that, the "p99" of 30
# answers is their slowest one: the summary says null (insufficient) beside its count, the histogram is kept.
MIN_SAMPLES = {"p50": 2, "p90": 10, "p99": 100, "p999": 1000}


def quantile_text(block: LatencySummary | None, key: str, digits: int = 1, unit: str = "") -> str:
    """A summary's quantile as the console and reports show it: the number, `insufficient (n=3)` below
    MIN_SAMPLES, `-` when nothing was recorded."""
    if block is None:
        return "-"
    value = getattr(block, key)
    return f"insufficient (n={block.count})" if value is None else f"{value:.{digits}f}{unit}"


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def from_values(values_us: array[int] | array[float] | np.ndarray) -> HdrHistogram:
    """The values (µs, clamped to the histogram's range) recorded at once: HDR's own bucket index of each value
    (`_counts_index_for`, in numpy) counted with bincount. `record_value` a value costs 3-5 µs in Python: 7 s after a
    point of 600,000 answers' three quantities on this machine. Counts, total, min and max equal one `record_value`
    a value (tests/load/test_units.py)."""
    histogram = new_histogram()
    values = np.clip(np.asarray(values_us).astype(np.int64), LOWEST_US, HIGHEST_US)
    if not len(values):
        return histogram
    # The smallest power of 2 holding the value (or the sub-bucket mask): frexp's exponent is the bit length,
    # exact for integers below 2**53.
    pow2ceiling = np.frexp((values | histogram.sub_bucket_mask).astype(np.float64))[1].astype(np.int64)
    bucket = pow2ceiling - histogram.unit_magnitude - (histogram.sub_bucket_half_count_magnitude + 1)
    sub_bucket = values >> (bucket + histogram.unit_magnitude)
    index = ((bucket + 1) << histogram.sub_bucket_half_count_magnitude) + (sub_bucket - histogram.sub_bucket_half_count)
    counts = np.ctypeslib.as_array(histogram.counts)
    counts += np.bincount(index, minlength=len(counts))[: len(counts)].astype(counts.dtype)
    histogram.total_count += len(values)
    histogram.min_value = min(histogram.min_value, int(values.min()))
    histogram.max_value = max(histogram.max_value, int(values.max()))
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


def _counts(histogram: HdrHistogram) -> np.ndarray:
    """The count at each bucket index (a decoded histogram's array can stop before `counts_len`: zeros beyond)."""
    length = min(histogram.counts_len, histogram.encoder.payload.counts_len)
    return np.ctypeslib.as_array(histogram.counts)[:length]


def recorded(histogram: HdrHistogram) -> list[tuple[int, int]]:
    """(value, count) at every bucket holding a count, lowest first, the value as HDR's recorded iterator
    reports it (the highest value equivalent to the bucket's)."""
    counts = _counts(histogram)
    return [
        (histogram.get_highest_equivalent_value(histogram.get_value_from_index(int(i))), int(counts[i]))
        for i in np.flatnonzero(counts)
    ]


def median_equivalent(histogram: HdrHistogram, value: int) -> int:
    """The middle of the value's bucket: what HDR's mean weighs each count by."""
    lowest = int(histogram.get_lowest_equivalent_value(value))
    return lowest + ((int(histogram.get_highest_equivalent_value(value)) + 1 - lowest) >> 1)


def summary_ms(histogram: HdrHistogram) -> LatencySummary | None:
    """The quantiles, max and mean in milliseconds, and the count; None when nothing was recorded; a quantile
    with fewer values than MIN_SAMPLES asks for is None.
    Each as HdrHistogram_py computes it (get_value_at_percentile, get_mean_value), without its per-bucket walk."""
    count = histogram.get_total_count()
    if not count:
        return None
    cumulative = np.cumsum(_counts(histogram))

    def at(percentile: float, key: str) -> float | None:
        if count < MIN_SAMPLES[key]:
            return None
        # The first bucket whose running count reaches the percentile's count, its highest equivalent value.
        index = int(np.searchsorted(cumulative, histogram.get_target_count_at_percentile(percentile)))
        return float(histogram.get_highest_equivalent_value(histogram.get_value_from_index(index))) / 1000.0

    total = sum(n * median_equivalent(histogram, value) for value, n in recorded(histogram))
    return LatencySummary(
        p50=at(50.0, "p50"),
        p90=at(90.0, "p90"),
        p99=at(99.0, "p99"),
        p999=at(99.9, "p999"),
        max=histogram.get_max_value() / 1000.0,
        mean=float(total) / histogram.total_count / 1000.0,
        count=count,
    )


def cdf_ms(histogram: HdrHistogram) -> list[tuple[float, float]]:
    """(latency ms, fraction of requests at or below it) at every recorded value, for CDF plots."""
    total = histogram.get_total_count()
    points: list[tuple[float, float]] = []
    seen = 0
    for value, n in recorded(histogram):
        seen += n
        points.append((value / 1000.0, seen / total))  # `recorded` gives each bucket's highest equivalent value
    return points
