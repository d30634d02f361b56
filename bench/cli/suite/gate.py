"""The suite's [gate] table: compare's thresholds (bench/gate/options.py), each checked as `ragbench compare`
checks its flag."""

from __future__ import annotations

from typing import Any

from bench.cli.suite.keys import TomlTable, TomlTypes, as_list, as_table, declared_keys, renamed_keys
from bench.cli.suite.values import ValueReader
from bench.gate.config import GateConfig, GateValueError, build_gate_config
from bench.gate.options import GateOptions

# compare's options a suite may give: `calibration` (A/A runs' folders) and `history` (a folder or glob) are
# relative to the suite file; `significance` is `--no-significance` turned round.
GATE_KEYS: dict[str, TomlTypes] = declared_keys(GateOptions)
_RENAMED = renamed_keys(GateOptions)  # max_error_rate: max_error_rate_increase's key before, for one release


def read_gate(reader: ValueReader, table: TomlTable) -> GateConfig:
    spelled = {new: old for old, (new, _) in _RENAMED.items() if old in table}  # a renamed key by its old name
    table = reader.typed(reader.renamed(table, _RENAMED, ("gate",)), GATE_KEYS, ("gate",))
    drops = table.get("max_drop", {})
    pairs = as_table(table.get("match"))
    if any(not isinstance(cur, str) for cur in pairs.values()):
        raise reader.error('gate.match: expected BASE_NAME = "CUR_NAME" pairs', "gate", "match")
    # compare's scalar options as its flags take them: GateOptions' keyword arguments (each typed there)
    given: dict[str, Any] = {k: v if isinstance(v, bool) else str(v) for k, v in table.items() if k in _SCALARS}
    if "history" in table:  # a glob need not exist as a path: read when the gate runs
        given["history"] = str(reader.path.parent / reader.expand(str(table["history"]), "gate", "history"))
    options = GateOptions(
        **given,
        max_drop=[f"{m}={v}" for m, v in drops.items()] if isinstance(drops, dict) else [str(drops)],
        primary=[str(m) for m in as_list(table.get("primary"))],
        match=[f"{base}={cur}" for base, cur in pairs.items()],
        calibration=[
            reader.file(str(v), reader.path.parent, "gate", "calibration") for v in as_list(table.get("calibration"))
        ],
    )
    try:
        return build_gate_config(options, name=lambda key: spelled.get(key, key))  # as the file spells it
    except GateValueError as exc:
        key = spelled.get(exc.key, exc.key)
        raise reader.error(f"gate.{key}: {exc.reason}", "gate", key) from None


_SCALARS = set(GATE_KEYS) - {"max_drop", "primary", "match", "calibration"}
