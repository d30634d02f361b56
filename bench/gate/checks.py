"""The gate's records: a check with its status and kind, and the comparison of two runs that holds them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from bench.results.store import Results


class Status(StrEnum):
    """A check's status; info: reported, never gated."""

    PASS = "pass"
    FAIL = "fail"
    INFO = "info"


class CheckKind(StrEnum):
    """What a check compares; `run` is a results file missing from the current run."""

    QUALITY = "quality"
    COST = "cost"
    IDENTITY = "identity"
    LOAD = "load"
    INGEST = "ingest"
    GROW = "grow"
    RUN = "run"


class CountAs(StrEnum):
    """What an inconclusive gate counts as (`compare --inconclusive`)."""

    PASS = "pass"
    FAIL = "fail"

    @property
    def status(self) -> Status:
        return Status.FAIL if self == CountAs.FAIL else Status.PASS


@dataclass
class Check:
    kind: CheckKind
    source: str  # the results file's path inside the compared folders ("" for a single file)
    name: str  # what is checked, e.g. "prod nDCG@10"
    status: Status
    summary: str  # one line with the figures
    figures: dict[str, Any] = field(default_factory=dict)
    not_gated: str = ""  # with status info: why what it reports was not gated (said in every output)
    inconclusive: str = ""  # a gate's interval straddled its limit: why, and what it counted as (every output)
    # inconclusive, yet past the limit with an interval that excludes no change: said in the verdict's first line
    likely_regression: str = ""

    @property
    def title(self) -> str:
        return f"{self.kind}: {self.source + ' ' if self.source else ''}{self.name}"


@dataclass
class Comparison:
    baseline: str
    current: str
    checks: list[Check]
    notes: list[str]  # said loudly: a changed dataset, a missing target or results file
    runs: list[tuple[str, Results]] = field(default_factory=list, repr=False)  # the current results, by source
    inconclusive_policy: CountAs = CountAs.PASS  # what an inconclusive gate counts as (compare --inconclusive)

    @property
    def regressions(self) -> list[Check]:
        return [c for c in self.checks if c.status == Status.FAIL]

    @property
    def passed(self) -> bool:
        return not self.regressions

    def to_dict(self) -> dict[str, object]:
        return {
            "baseline": self.baseline,
            "current": self.current,
            "verdict": Status.PASS if self.passed else Status.FAIL,
            "inconclusive": {
                "checks": sum(1 for c in self.checks if c.inconclusive),
                "counted_as": self.inconclusive_policy,
            },
            "likely_regressions": sum(1 for c in self.checks if c.likely_regression),
            "notes": self.notes,
            "checks": [asdict(c) for c in self.checks],
        }
