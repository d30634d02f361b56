"""The load points a gate reads: each checked for figures it can judge, keyed by point, and its gated p99."""

from __future__ import annotations

from bench.core.errors import InputError
from bench.gate.figures import as_number, figure_text
from bench.load import histograms
from bench.load.points import PointKey, point_label
from bench.results.schema import Latencies, LatencySummary, LoadPointRecord, Loop
from bench.results.store import Results


def p99_quantity(point: LoadPointRecord) -> str:
    """The latency that counts: from the intended send time in the open loop (a stalled server cannot hide
    behind a slowed client), send to last byte otherwise."""
    return "scheduled" if point.loop == Loop.OPEN else "service"


def latency_p99(latencies: Latencies, quantity: str) -> float | None:
    """The p99 of one latency quantity (`scheduled`, `service`) of a point or a repeat; None where it has none."""
    block: LatencySummary | None = getattr(latencies, quantity)
    return block.p99 if block is not None else None


def point_p99(point: LoadPointRecord) -> float | None:
    """The point's p99 of the latency that counts; None where it has none or it is not a finite number."""
    return as_number(latency_p99(point.latency_ms, p99_quantity(point)))


def checked_points(results: Results, match: dict[str, str] | None = None) -> dict[PointKey, LoadPointRecord]:
    """Every load point of a results file by its `PointKey` (endpoints renamed by `match`), each checked: a
    figure compare cannot judge, or the same point twice (which one counts cannot be told: appending a
    record must not hide a regression), is an input error naming the file and line."""
    points: dict[PointKey, LoadPointRecord] = {}
    for point in results.load_points:
        _check_point(point, results)
        key = PointKey.of(point, (match or {}).get(point.endpoint, point.endpoint))
        if key in points:
            raise InputError(
                results.path,
                f"load_point {point_label(point, point.endpoint)} again (first on line "
                f"{results.line(points[key])}): a results file measures each point once",
                results.line(point),
            )
        points[key] = point
    return points


def _check_point(point: LoadPointRecord, results: Results) -> None:
    """What the reader's types leave to check: counts and figures compare can judge (a hand-edited file)."""

    def bad(what: str) -> InputError:
        label = point_label(point, point.endpoint)
        return InputError(results.path, f"load_point record {label}: {what}", results.line(point))

    if point.loop == Loop.OPEN and as_number(point.rate) is None:
        raise bad(f"loop {point.loop!r} without a rate")
    requests = point.requests
    if min(requests.sent, requests.ok, requests.unsent, *requests.errors.values()) < 0:
        raise bad("requests.sent, ok, unsent and every errors count must be whole numbers >= 0")
    if requests.ok > requests.sent:
        raise bad(f"requests.ok {requests.ok} > sent {requests.sent}")
    texts_per_s = as_number(point.throughput.texts_per_s)
    if texts_per_s is None or texts_per_s < 0:
        raise bad(f"throughput.texts_per_s is {figure_text(point.throughput.texts_per_s)}, not a finite number >= 0")
    if as_number(point.duration_s) is None or point.duration_s < 0:
        raise bad(f"duration_s is {figure_text(point.duration_s)}, not a finite number >= 0")
    block = getattr(point.latency_ms, p99_quantity(point))
    p99 = block.p99 if block is not None else None
    p99_ms_value = as_number(p99)
    # No success: no latency; too few answers: a null p99 (insufficient, histograms.MIN_SAMPLES), not gated.
    insufficient = p99 is None and block is not None and block.count < histograms.MIN_SAMPLES["p99"]
    if (requests.ok or block is not None) and not insufficient and (p99_ms_value is None or p99_ms_value < 0):
        raise bad(f"latency_ms.{p99_quantity(point)}.p99 is {figure_text(p99)}, not a finite number >= 0")
