"""`compare`: gate a current run against a baseline, results file by results file, check by check.

Inputs are results files or folders (bench.gate.inputs): files are paired by their path inside the folder;
each pair gets its quality, cost, identity, load, ingest and grow checks (bench.gate.quality, cost, identity, load,
ingest, grow). A target whose two runs name different vector stores (`store=` on an app target, or the store the
app reports) is not paired: one info check says "different stores: A vs B, not paired" and none of its figures is
compared, unless --match pairs the two by name (said in the notes); a store named on one side only is paired and
said in the notes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from bench.core.errors import UserError
from bench.gate.checks import Check, CheckKind, Comparison, Status
from bench.gate.config import GateConfig
from bench.gate.cost import compare_cost
from bench.gate.grow import compare_grow
from bench.gate.identity import compare_identity
from bench.gate.ingest import compare_ingest
from bench.gate.inputs import locate_results
from bench.gate.load import compare_load
from bench.gate.quality import compare_quality
from bench.results.outdir import RESULTS_FILE
from bench.results.schema import QUALITY_COMMANDS, EndStatus
from bench.results.schema.run import record_store, without_store
from bench.results.store import Results, read_results


def compare_paths(baseline: Path, current: Path, config: GateConfig) -> Comparison:
    """Compare every results file of `current` with its counterpart in `baseline`."""
    base_files, cur_files = locate_results(baseline), locate_results(current)
    checks: list[Check] = []
    notes: list[str] = []
    if len(base_files) == 1 and len(cur_files) == 1:  # two single files pair whatever their paths
        (base_key, base_file), (cur_key, cur_file) = *base_files.items(), *cur_files.items()
        pairs = [(base_key if base_key == cur_key else "", base_file, cur_file)]
    else:
        pairs = [(key, base_files[key], cur_files[key]) for key in sorted(base_files) if key in cur_files]
        for key in sorted(set(base_files) - set(cur_files)):
            checks.append(
                Check(
                    CheckKind.RUN,
                    key,
                    RESULTS_FILE,
                    Status.FAIL,
                    f"{key}/{RESULTS_FILE} is in the baseline, not in the current run",
                )
            )
        for key in sorted(set(cur_files) - set(base_files)):
            notes.append(f"{key}/{RESULTS_FILE} is new in the current run: nothing to compare it with")
    loaded = [(key, read_results(b), read_results(c)) for key, b, c in pairs]
    _check_measures_named(config, [r for _, b, c in loaded for r in (b, c)])
    for key, base, cur in loaded:
        more_checks, more_notes = compare_results(base, cur, config, key)
        checks += more_checks
        notes += more_notes
    notes += config.calibration.notes
    runs = [(key, cur) for key, _, cur in loaded]
    return Comparison(str(baseline), str(current), checks, notes, runs, config.inconclusive)


def _check_measures_named(config: GateConfig, results: list[Results]) -> None:
    known = {m for r in results for m in r.header.measures}
    primary = {m for _, m in config.primary}
    for flag, named in (("--max-drop", set(config.max_drop) - {"*"}), ("--primary", primary)):
        unknown = sorted(named - known)
        if unknown and any(r.header.measures for r in results):
            raise UserError(
                f"{flag} names {', '.join(unknown)}, which no compared run measured "
                f"(measured: {', '.join(sorted(known))})"
            )
    targets = {r.target for result in results for r in result.metrics}
    strangers = sorted({t for t, _ in config.primary if t is not None} - targets)
    if strangers:  # a misspelt target would leave nothing gated: a silent pass
        raise UserError(
            f"--primary names target {', '.join(strangers)}, which no compared run has "
            f"(targets: {', '.join(sorted(targets))})"
        )
    unused = sorted(set(config.max_drop) - {"*"} - primary) if primary else []
    if unused:  # an allowance that would gate nothing: the user meant it to gate something
        raise UserError(
            f"--max-drop names {', '.join(unused)}, which is not a --primary measure: only --primary checks "
            "are gated (add it to --primary, or drop its --max-drop)"
        )


def compare_results(base: Results, cur: Results, config: GateConfig, source: str = "") -> tuple[list[Check], list[str]]:
    """Every check between two results files."""
    notes: list[str] = []
    where = f"{source}: " if source else ""
    if base.header.command != cur.header.command and {base.header.command, cur.header.command} != set(QUALITY_COMMANDS):
        raise UserError(
            f"{where}baseline is a {str(base.header.command)!r} run, current a {str(cur.header.command)!r} run: "
            "nothing to compare"
        )
    for label, results in (("baseline", base), ("current", cur)):
        if results.end is None or results.end.status != EndStatus.COMPLETE:
            status = results.end.status if results.end else "cut off (no end record)"
            notes.append(f"{where}the {label} run is {status}: only what it finished is compared")
    base, cur, checks, store_notes = _split_stores(base, cur, config, source)
    notes += store_notes
    for compare_kind in (compare_quality, compare_cost, compare_identity, compare_load, compare_ingest, compare_grow):
        more_checks, more_notes = compare_kind(base, cur, config, source)
        checks += more_checks
        notes += more_notes
    return checks, notes


def _stores(results: Results) -> dict[str, tuple[CheckKind, str | None]]:
    """Every target a results file measured (a quality target's name, an ingest point's spec, a grow rung's
    target), with the kind of check its figures get and the store it names."""
    named: dict[str, tuple[CheckKind, str | None]] = {}
    for kind, records in (
        (CheckKind.QUALITY, results.targets),
        (CheckKind.INGEST, results.ingest_points),
        (CheckKind.GROW, results.grow_rungs),
    ):
        for record in records:
            name = _target_of(record)
            if name is not None and named.get(name, (kind, None))[1] is None:
                named[name] = (kind, record_store(record))
    return named


def _target_of(record: object) -> str | None:
    target = getattr(record, "target", None)
    if isinstance(target, str):
        return target
    name = getattr(record, "name", None) if getattr(record, "record", None) == "target" else None
    return name if isinstance(name, str) else None


def _split_stores(
    base: Results, cur: Results, config: GateConfig, source: str
) -> tuple[Results, Results, list[Check], list[str]]:
    """The two runs without the targets measured on different stores (each said by an info check), and notes for a
    store named on one side only. A target matches by name (or --match); one whose names differ only in `store=`
    is the same target on another store."""
    was, now = _stores(base), _stores(cur)
    pairs = [(b, config.match.get(b, b)) for b in was if config.match.get(b, b) in now]
    paired = {c for _, c in pairs}
    for b in [b for b in was if config.match.get(b, b) not in now]:
        twin = next((c for c in now if c not in paired and without_store(c) == without_store(b)), None)
        if twin is not None:
            pairs.append((b, twin))
            paired.add(twin)
    checks: list[Check] = []
    notes: list[str] = []
    dropped: tuple[set[str], set[str]] = (set(), set())
    where = f"{source}: " if source else ""
    for b, c in pairs:
        (kind, b_store), (_, c_store) = was[b], now[c]
        name = b if b == c else f"{b} vs {c}"
        if b_store and c_store and b_store != c_store and b in config.match:
            notes.append(f"{where}{name}: different stores ({b_store} vs {c_store}), paired as --match asks")
        elif b_store and c_store and b_store != c_store:
            why = f"different stores: {b_store} vs {c_store}, not paired"
            checks.append(Check(kind, source, name, Status.INFO, f"{name}: not gated: {why}", not_gated=why))
            dropped[0].add(b)
            dropped[1].add(c)
        elif (b_store is None) != (c_store is None):
            notes.append(
                f"{where}{name}: store named in one run only (baseline {b_store or 'not named'}, current "
                f"{c_store or 'not named'}): paired as one store; name it on both (store=NAME)"
            )
    return _without(base, dropped[0]), _without(cur, dropped[1]), checks, notes


def _without(results: Results, targets: set[str]) -> Results:
    """The results with every record of `targets` left out."""
    if not targets:
        return results
    records = {kind: [r for r in rows if _target_of(r) not in targets] for kind, rows in results.records.items()}
    return replace(results, records=records)
