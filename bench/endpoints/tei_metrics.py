"""TEI's Prometheus /metrics read into counters, gauges and histograms (its `te_*` families)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

METRICS_PREFIX = "te_"


class MetricType(StrEnum):
    """The Prometheus metric family types this reader takes (prometheus_client's `Metric.type`); others are skipped."""

    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"


@dataclass(frozen=True)
class HistogramSnapshot:
    """A histogram as read: its count, its sum (seconds, as TEI exports them) and its buckets (le -> count)."""

    count: float
    sum: float
    buckets: dict[str, float]


@dataclass(frozen=True)
class MetricsSnapshot:
    """TEI's `te_*` families at one moment, keyed `name{labels}`."""

    counters: dict[str, float]
    gauges: dict[str, float]
    histograms: dict[str, HistogramSnapshot]

    @property
    def empty(self) -> bool:
        return not (self.counters or self.gauges or self.histograms)


def _labels(labels: dict[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "le")
    return f"{{{inner}}}" if inner else ""


def parse_snapshot(text: str) -> MetricsSnapshot:
    """TEI's Prometheus text (its `te_*` families) -> its counters, gauges and histograms, keyed `name{labels}`:
    the one reading of /metrics, by prometheus_client's parser."""
    from prometheus_client.parser import text_string_to_metric_families

    counters: dict[str, float] = {}
    gauges: dict[str, float] = {}
    counts: dict[str, float] = {}
    sums: dict[str, float] = {}
    buckets: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith(METRICS_PREFIX):
            continue
        for sample in family.samples:
            key = family.name + _labels(sample.labels)
            if (
                family.type == MetricType.COUNTER
                and sample.name.endswith(("_total", family.name))
                and not sample.name.endswith("_created")
            ):
                counters[key] = counters.get(key, 0.0) + sample.value
            elif family.type == MetricType.GAUGE:
                gauges[key] = sample.value
            elif family.type == MetricType.HISTOGRAM:
                block = buckets.setdefault(key, {})
                if sample.name.endswith("_bucket"):
                    block[sample.labels.get("le", "+Inf")] = sample.value
                elif sample.name.endswith("_count"):
                    counts[key] = sample.value
                elif sample.name.endswith("_sum"):
                    sums[key] = sample.value
    hists = {key: HistogramSnapshot(counts.get(key, 0.0), sums.get(key, 0.0), block) for key, block in buckets.items()}
    return MetricsSnapshot(counters, gauges, hists)
