"""TEI's Prometheus /metrics read into counters, gauges and histograms (its `te_*` families)."""

from __future__ import annotations

from typing import Any

METRICS_PREFIX = "te_"


def _labels(labels: dict[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k != "le")
    return f"{{{inner}}}" if inner else ""


def parse_snapshot(text: str) -> dict[str, Any]:
    """TEI's Prometheus text (its `te_*` families) -> {"counters": {...}, "gauges": {...}, "histograms": {name:
    {count, sum, buckets}}}, keyed `name{labels}`: the one reading of /metrics, by prometheus_client's parser."""
    from prometheus_client.parser import text_string_to_metric_families

    counters: dict[str, float] = {}
    gauges: dict[str, float] = {}
    hists: dict[str, dict[str, Any]] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith(METRICS_PREFIX):
            continue
        for sample in family.samples:
            key = family.name + _labels(sample.labels)
            if (
                family.type == "counter"
                and sample.name.endswith(("_total", family.name))
                and not sample.name.endswith("_created")
            ):
                counters[key] = counters.get(key, 0.0) + sample.value
            elif family.type == "gauge":
                gauges[key] = sample.value
            elif family.type == "histogram":
                block = hists.setdefault(key, {"count": 0.0, "sum": 0.0, "buckets": {}})
                if sample.name.endswith("_bucket"):
                    block["buckets"][sample.labels.get("le", "+Inf")] = sample.value
                elif sample.name.endswith("_count"):
                    block["count"] = sample.value
                elif sample.name.endswith("_sum"):
                    block["sum"] = sample.value
    return {"counters": counters, "gauges": gauges, "histograms": hists}
