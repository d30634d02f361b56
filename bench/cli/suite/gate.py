"""The suite's [gate] table: compare's thresholds, each checked as `ragbench compare` checks its flag."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.cli.suite.keys import TomlTypes
from bench.cli.suite.values import ValueReader
from bench.core.errors import UserError
from bench.core.values import parse_allowance, parse_error_rate, parse_ratio
from bench.gate.compare import (
    GateConfig,
    load_calibration,
    parse_inconclusive,
    parse_max_drops,
    parse_primary,
)

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
}


def read_gate(reader: ValueReader, table: dict[str, Any]) -> GateConfig:
    table = reader.typed(table, GATE_KEYS, ("gate",))

    def flag(key: str, parse: Callable[[Any], Any]) -> Any:
        try:
            return parse(table[key])
        except UserError as exc:
            raise reader.error(f"gate.{key}: {exc}", "gate", key) from None

    drops = table.get("max_drop", {})
    items = [f"{m}={v}" for m, v in drops.items()] if isinstance(drops, dict) else [str(drops)]
    config = GateConfig(
        max_drop=flag("max_drop", lambda _: parse_max_drops(items)) if "max_drop" in table else {},
        significance=table.get("significance", True),
    )
    if "alpha" in table:
        config.alpha = float(table["alpha"])
        if not 0 < config.alpha < 1:
            raise reader.error("gate.alpha: must be between 0 and 1", "gate", "alpha")
    if "max_p99_increase" in table:
        config.max_p99_increase = flag(
            "max_p99_increase", lambda v: parse_allowance(str(v), "max_p99_increase", percent_only=True)
        )
    if "min_throughput_ratio" in table:
        config.min_throughput_ratio = flag(
            "min_throughput_ratio", lambda v: parse_ratio(str(v), "min_throughput_ratio")
        )
    if "min_ingest_ratio" in table:
        config.min_ingest_ratio = flag("min_ingest_ratio", lambda v: parse_ratio(str(v), "min_ingest_ratio"))
    if "max_query_p99_increase" in table:
        config.max_query_p99_increase = flag(
            "max_query_p99_increase",
            lambda v: parse_allowance(str(v), "max_query_p99_increase", percent_only=True),
        )
    if "max_error_rate" in table:
        config.max_error_rate = flag("max_error_rate", lambda v: parse_error_rate(str(v), "max_error_rate"))
    if "inconclusive" in table:
        config.inconclusive = flag("inconclusive", lambda v: parse_inconclusive(v, "inconclusive"))
    if "primary" in table:
        config.primary = flag("primary", lambda v: parse_primary([str(m) for m in v]))
    match = table.get("match", {})
    if not all(isinstance(v, str) for v in match.values()):
        raise reader.error('gate.match: expected BASE_NAME = "CUR_NAME" pairs', "gate", "match")
    config.match = dict(match)
    if "calibration" in table:
        runs = [reader.file(str(v), reader.path.parent, "gate", "calibration") for v in table["calibration"]]
        config.calibration = flag("calibration", lambda _: load_calibration(runs))
    return config
