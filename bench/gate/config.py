"""The gate's configuration: `GateConfig`, and the one builder that checks every value given to it.

`compare`'s options and a suite file's `[gate]` table give the same values; `build_gate_config` checks each
once (one line, exit 2) and names it as its caller spells it (`--max-p99-increase` or `max_p99_increase`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from bench.core import values
from bench.core.errors import UserError
from bench.core.values import Allowance, parse_allowance, parse_error_rate, parse_ratio
from bench.gate.calibration import Calibration, load_calibration
from bench.gate.checks import CountAs
from bench.gate.options import GateOptions
from bench.quality.metrics import parse_measure

_T = TypeVar("_T")


@dataclass
class GateConfig:
    max_drop: dict[str, Allowance] = field(default_factory=dict)  # trec name (or `*`) -> allowance; default 0
    alpha: float = 0.05
    significance: bool = True
    max_p99_increase: Allowance | None = None  # load; None: p99 reported, not gated
    min_throughput_ratio: float | None = None  # load; None: throughput reported, not gated
    # load: largest allowed rise of a point's error rate (a fraction; --max-error-rate-increase); 0: any rise fails
    max_error_rate: float = 0.0
    min_ingest_ratio: float | None = None  # quality cost texts/s, ingest docs/s: current/baseline; None: not gated
    max_query_p99_increase: Allowance | None = None  # quality cost: per-query p99; None: reported, not gated
    match: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    permutations: int = 10_000
    bootstrap: int = 10_000
    inconclusive: CountAs = CountAs.PASS  # what an inconclusive load or quality gate counts as
    primary: tuple[tuple[str | None, str], ...] = ()  # (target or None: every target, trec name): the family
    calibration: Calibration = field(default_factory=Calibration)  # load: the runner's noise between runs
    history: str | None = None  # load: earlier runs (folder or glob) whose newest segment calibrates, not `calibration`

    def allowance(self, measure: str) -> Allowance:
        return self.max_drop.get(measure) or self.max_drop.get("*") or Allowance(0.0)

    def not_gated(self, base_name: str, cur_name: str, measure: str) -> str:
        """Why a quality check is outside the gated family (empty: it is in it). Without `--primary` the family
        is every measure with a `--max-drop` (every measure when none names one: the default allowance 0)."""
        if self.primary:
            if any(m == measure and t in (None, base_name, cur_name) for t, m in self.primary):
                return ""
            return "not a --primary check (only those are gated and corrected for together)"
        named = set(self.max_drop) - {"*"}
        if "*" in self.max_drop or not named or measure in named:
            return ""
        return "no --max-drop for this measure (only measures with one are gated and corrected for together)"


class GateValueError(UserError):
    """A gate value that failed its check: `key` names it in a suite file's `[gate]` table, `reason` is the
    message without the value's name (the suite file says its key instead)."""

    def __init__(self, key: str, message: str, reason: str = ""):
        super().__init__(message)
        self.key = key
        self.reason = reason or message


def option_flag(key: str) -> str:
    """`max_p99_increase` -> `--max-p99-increase`: how `compare` names a gate value."""
    return "--" + key.replace("_", "-")


def build_gate_config(options: GateOptions, name: Callable[[str], str] = option_flag) -> GateConfig:
    """Every gate value checked, each named by `name(key)`; a value that fails raises `GateValueError`.
    `max_drop`: `MEASURE=AMOUNT` or `AMOUNT` items; `match`: `BASE=CUR` items; None: reported, not gated."""

    def allowance(key: str, value: str | None) -> Allowance | None:
        if value is None:
            return None
        return _checked(key, lambda: parse_allowance(value, name(key), percent_only=True))

    def ratio(key: str, value: str | None) -> float | None:
        return None if value is None else _checked(key, lambda: parse_ratio(value, name(key)))

    level = _checked("alpha", lambda: _alpha(options.alpha, name("alpha")))
    if options.history is not None and options.calibration:
        reason = f"give {name('history')} or {name('calibration')}, not both (the history's runs are the calibration)"
        raise GateValueError("history", f"{name('history')} {options.history}: {reason}", reason)
    rate = options.max_error_rate_increase
    return GateConfig(
        max_drop=_checked("max_drop", lambda: parse_max_drops(options.max_drop or [])),
        alpha=level,
        significance=options.significance,
        max_p99_increase=allowance("max_p99_increase", options.max_p99_increase),
        min_throughput_ratio=ratio("min_throughput_ratio", options.min_throughput_ratio),
        max_error_rate=_checked(
            "max_error_rate_increase", lambda: parse_error_rate(rate, name("max_error_rate_increase"))
        ),
        min_ingest_ratio=ratio("min_ingest_ratio", options.min_ingest_ratio),
        max_query_p99_increase=allowance("max_query_p99_increase", options.max_query_p99_increase),
        match=_checked("match", lambda: parse_matches(options.match or [])),
        seed=_checked("seed", lambda: values.number(name("seed"), options.seed, values.SEED)),
        inconclusive=_checked("inconclusive", lambda: parse_inconclusive(options.inconclusive, name("inconclusive"))),
        primary=_checked("primary", lambda: parse_primary(options.primary or [])),
        calibration=_checked("calibration", lambda: load_calibration(list(options.calibration or []))),
        history=options.history,
    )


def _checked(key: str, parse: Callable[[], _T]) -> _T:
    """`parse()`, its error said as the gate value `key`'s."""
    try:
        return parse()
    except GateValueError:
        raise
    except UserError as exc:
        raise GateValueError(key, str(exc)) from None


def _alpha(value: str, flag: str) -> float:
    """The significance level, in (0, 1)."""
    level = parse_ratio(value, flag)
    if not 0 < level < 1:
        reason = "must be between 0 and 1"
        raise GateValueError("alpha", f"{flag} {value!r}: {reason}", reason)
    return level


def parse_max_drops(items: Sequence[str]) -> dict[str, Allowance]:
    """`MEASURE=AMOUNT` per measure (label or trec_eval name) or a bare `AMOUNT` for every measure (key `*`)."""
    drops: dict[str, Allowance] = {}
    for item in items:
        measure, sep, amount = item.rpartition("=")
        key = parse_measure(measure).trec_name if sep else "*"
        drops[key] = parse_allowance(amount, "--max-drop")
    return drops


def parse_matches(items: Sequence[str]) -> dict[str, str]:
    """`BASE_NAME=CUR_NAME` items: the baseline's target or endpoint BASE_NAME is the current run's CUR_NAME."""
    matches: dict[str, str] = {}
    for item in items:
        base, sep, cur = item.partition("=")
        if not sep or not base.strip() or not cur.strip():
            raise UserError(f"--match {item!r}: expected BASE_NAME=CUR_NAME")
        matches[base.strip()] = cur.strip()
    return matches


def parse_primary(items: Sequence[str]) -> tuple[tuple[str | None, str], ...]:
    """`MEASURE` or `TARGET:MEASURE` (label or trec_eval name): the gated quality checks, Holm's family."""
    found: list[tuple[str | None, str]] = []
    for item in items:
        target, sep, measure = item.rpartition(":")
        if sep and not target.strip():
            raise UserError(f"--primary {item!r}: expected MEASURE or TARGET:MEASURE")
        found.append((target.strip() or None, parse_measure(measure.strip()).trec_name))
    return tuple(found)


def parse_inconclusive(text: str, flag: str) -> CountAs:
    """What an inconclusive gate (a load interval straddling its limit, a quality drop significant only
    before the family's correction) counts as: pass or fail."""
    try:
        return CountAs(text)
    except ValueError:
        raise UserError(f"{flag} {text!r}: expected pass or fail") from None
