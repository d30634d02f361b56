"""The suite's [gate] table: compare's thresholds, each checked as `ragbench compare` checks its flag."""

from __future__ import annotations

from typing import Any

from bench.cli.suite.keys import TomlTypes
from bench.cli.suite.values import ValueReader
from bench.gate.config import GateConfig, GateValueError, build_gate_config

GATE_KEYS: dict[str, TomlTypes] = {
    "alpha": (float, int),
    "max_drop": (dict, float, int, str),
    "significance": bool,
    "max_p99_increase": (str, float, int),
    "min_throughput_ratio": (float, int, str),
    "match": dict,
    "max_error_rate": (str, float, int),
    "inconclusive": str,
    "primary": list,  # MEASURE or TARGET:MEASURE (compare --primary)
    "min_ingest_ratio": (float, int, str),
    "max_query_p99_increase": (str, float, int),
    "calibration": list,  # A/A runs' folders, relative to the suite file (compare --calibration)
    "history": str,  # earlier runs' folder or glob, relative to the suite file (compare --history)
}


def read_gate(reader: ValueReader, table: dict[str, Any]) -> GateConfig:
    table = reader.typed(table, GATE_KEYS, ("gate",))
    drops = table.get("max_drop", {})
    runs = [reader.file(str(v), reader.path.parent, "gate", "calibration") for v in table.get("calibration", [])]
    given = {k: v for k, v in table.items() if k not in ("max_drop", "primary", "calibration")}
    if "history" in table:  # a glob need not exist as a path: read when the gate runs
        given["history"] = str(reader.path.parent / reader.expand(table["history"], "gate", "history"))
    try:
        return build_gate_config(
            **given,
            max_drop=[f"{m}={v}" for m, v in drops.items()] if isinstance(drops, dict) else [str(drops)],
            primary=[str(m) for m in table.get("primary", [])],
            calibration=runs,
            name=lambda key: key,  # a suite key is named as the file spells it
        )
    except GateValueError as exc:
        raise reader.error(f"gate.{exc.key}: {exc.reason}", "gate", exc.key) from None
