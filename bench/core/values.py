"""The numbers a user gives ragbench — on the command line or in a suite file — parsed once, here.

Each quantity is declared once below with its bounds and the reason for them, and every command and the
suite file reader go through `number`, `number_list` and `duration`, so a value gets the same bounds and
the same one-line error (`--batch '1e20': ...`, exit 2) wherever it is written, before any work starts.
Every bound is finite: `inf`, `nan` and `1e400` (which float() reads as inf) are refused like any other
value out of range. The gate's allowances and ratios (`2%`, `0.95`) are parsed here too.

    >>> number_list("--batch", "1,8,32", TEXTS_PER_REQUEST)
    [1, 8, 32]
    >>> duration("--duration", "500ms", SECONDS)
    0.5
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import ClassVar, overload

from bench.core.errors import UserError


@dataclass(frozen=True)
class Bounds:
    """What a number given by a user may be: `Quantity` a real one, `Count` a whole one."""

    integer: ClassVar[bool] = False
    noun: str  # what one unit is, for the error line: "texts per request"
    low: float
    high: float
    above_low: bool = False  # `low` itself is refused (a rate must be > 0)
    why: str = ""  # the reason for `high`, said when a value passes it

    def describe(self, plural: bool = False) -> str:
        kind = (
            ("whole numbers" if plural else "a whole number")
            if self.integer
            else ("positive numbers" if plural else "a positive number")
            if self.above_low and self.low == 0
            else ("numbers" if plural else "a number")
        )
        if self.above_low and self.low == 0:
            return f"{kind} up to {_shown(self.high)}"
        return f"{kind} from {_shown(self.low)} to {_shown(self.high)}"

    def check(self, flag: str, shown: object, value: float | None, listed: bool = False) -> float:
        """`value` when it is within bounds, else a UserError that says what was expected."""
        if value is None or not math.isfinite(value) or value < self.low or (self.above_low and value == self.low):
            expected = (
                f"{self.describe(plural=True)} ({self.noun}), comma-separated, as 1,8,32"
                if listed
                else f"{self.describe()} ({self.noun})"
            )
            raise UserError(f"{flag} {shown!r}: expected {expected}")
        if value > self.high:
            raise UserError(
                f"{flag} {shown!r}: at most {_shown(self.high)} {self.noun}" + (f" ({self.why})" if self.why else "")
            )
        return value


@dataclass(frozen=True)
class Quantity(Bounds):
    """A real number within bounds: the parsers give a float."""


@dataclass(frozen=True)
class Count(Bounds):
    """A whole number within bounds: the parsers give an int."""

    integer: ClassVar[bool] = True


# --- the bounds, each with its reason --------------------------------------------------------------------------
TEXTS_PER_REQUEST = Count(
    "texts per request",
    1,
    4096,
    why=(
        "twice the 2,048 inputs OpenAI's embeddings API takes per request; TEI's --max-client-batch-size defaults to 32"
    ),
)
TOKENS_PER_TEXT = Count(
    "tokens per text",
    1,
    32768,
    why=(
        "the longest input of today's embedding and rerank models, 32k tokens; "
        "a server truncates or refuses beyond its own"
    ),
)
USERS = Count(
    "requests in flight",
    1,
    4096,
    why="8 times TEI's default --max-concurrent-requests of 512; each one holds a socket of the client",
)
USERS_OR_UNCAPPED = replace(USERS, noun="requests in flight, 0 = no cap", low=0)
BURST_TEXTS = Count(
    "texts in a burst",
    1,
    100_000,
    why=(
        "the chunks of a 100 MB file at Open WebUI's default CHUNK_SIZE of 1,000 characters; "
        "all are encoded before it starts"
    ),
)
RATE = Quantity(
    "requests/s offered",
    0,
    1_000_000,
    above_low=True,
    why="14 times the 72,107/s one worker of this client sent at most, docs/load.md: beyond, the client sets the pace",
)
SCHEDULED_REQUESTS = Count(
    "requests per point",
    1,
    10_000_000,
    why="an open loop's send times are computed before the point starts: 80 MB and well under a second at this size",
)
WORKERS = Count(
    "worker processes",
    1,
    1024,
    why="each worker, a process or a Ray actor, holds its own copy of a point's encoded requests",
)
SECONDS = Quantity("seconds", 0, 86_400, above_low=True, why="one day per point")
WARMUP_SECONDS = Quantity("seconds", 0, 86_400, why="one day per point")
TIMEOUT_SECONDS = Quantity(
    "seconds",
    0,
    3600,
    above_low=True,
    why="an hour: a request that takes longer is not measuring a service",
)
LATENCY_MS = Quantity(
    "milliseconds",
    0,
    3_600_000,
    above_low=True,
    why="an hour, the longest --timeout: no answer slower than that is ever measured",
)
PEAK_TFLOPS = Quantity(
    "TFLOP/s",
    0,
    100_000,
    above_low=True,
    why="20 times the dense peak of the fastest accelerator sold today (about 5,000 TFLOP/s)",
)
ERROR_RATE = Quantity(
    "errors per request",
    0,
    1,
    why="a share of the requests, unsent ones counted as errors: 0.001 is one in a thousand, 1 marks nothing",
)
REPEATS = Count(
    "repeats per point",
    1,
    1000,
    why="each repeat is a whole measured point; the interval narrows as 1/sqrt(N): 1000 is 30 times narrower than 1",
)
PROBE_REQUESTS = Count(
    "requests per probe",
    1,
    1_000_000,
    why="a probe's length in requests; a million at the slowest rate is capped by the 120 s a probe may last anyway",
)
PROBES = Count("probes", 2, 64, why="each probe is a measured point; 64 halvings pass a float's resolution")
SEED = Count("seed", 0, 2**63 - 1, why="a signed 64-bit integer, which every reader of a results file keeps exactly")
TARGET_RPS = Quantity(
    "requests/s",
    0,
    1e9,
    above_low=True,
    why="a billion requests/s: a planet's traffic, far past any fleet this sizes",
)
RANKED_DOCUMENTS = Count(
    "documents ranked per query",
    1,
    100_000,
    why="100 times the 1,000 a TREC run ranks per query; each query's ranking is held, scored and written per target",
)
RERANKED_DOCUMENTS = Count(
    "documents re-scored per query",
    1,
    100_000,
    why="the bound of --depth: the first stage ranks the larger of the two per query for the cross-encoder",
)
TARGET_TEXTS_PER_S = replace(TARGET_RPS, noun="texts/s")
TARGET_TOKENS_PER_S = replace(TARGET_RPS, noun="tokens/s", high=1e12, why="a thousand times a billion texts/s")
SLO_PERCENTILE = Quantity(
    "percentile",
    50,
    99.99,
    why="from the median to p99.99; p100 is the slowest request, which no number of requests pins down",
)
LATENCY_SECONDS = Quantity(
    "seconds",
    0,
    3600,
    above_low=True,
    why="an hour, the longest --timeout: no answer slower than that is ever measured",
)
MAX_TIME_SECONDS = Quantity("seconds", 0, 7 * 86_400, above_low=True, why="a week for one run")
HOURLY_USD = Quantity("USD per GPU hour", 0, 1e6, above_low=True, why="a thousand times the price of any GPU for hire")

REQUEST_MEMORY = Count(
    "bytes of encoded requests",
    0,
    2 * 1024**3,
    why="all copies of a point's requests together, the driver's and each worker's: what a CI runner, "
    "7 GB on GitHub's hosted Linux ones, spares beside the server it measures",
)


# --- the parsers -------------------------------------------------------------------------------------------------
def _parse(value: str | int | float, integer: bool) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return None if integer and isinstance(value, float) and not value.is_integer() else value
    text = value.strip()
    try:
        return int(text) if integer else float(text)
    except ValueError:
        return None


@overload
def number(flag: str, value: str | int | float, quantity: Count) -> int: ...
@overload
def number(flag: str, value: str | int | float, quantity: Quantity) -> float: ...
def number(flag: str, value: str | int | float, quantity: Bounds) -> int | float:
    """One value of `quantity`: text from the command line, or a number from a typed option or a suite file."""
    checked = quantity.check(flag, value, _parse(value, quantity.integer))
    return int(checked) if quantity.integer else float(checked)


@overload
def number_list(flag: str, text: str | None, quantity: Count) -> list[int]: ...
@overload
def number_list(flag: str, text: str | None, quantity: Quantity) -> list[float]: ...
def number_list(flag: str, text: str | None, quantity: Bounds) -> list[int] | list[float]:
    """`1,8,32` -> [1, 8, 32]: each item a value of `quantity`; None (the flag not given) -> []."""
    if text is None:
        return []
    values: list[float] = []
    items = str(text).split(",")
    for item in items:
        value = quantity.check(flag, text, _parse(item, quantity.integer), listed=True)
        if value in values:  # the same point twice: two records of one point, which compare rightly refuses
            first = items[values.index(value)].strip()
            same = "" if first == item.strip() else f" ({first} and {item.strip()} are the same number to a float)"
            raise UserError(f"{flag} {text!r}: {item.strip()} is listed twice{same}")
        values.append(value)
    return [int(value) for value in values] if quantity.integer else [float(value) for value in values]


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def duration(flag: str, text: str, quantity: Quantity) -> float:
    """`30s`, `500ms`, `2m`, `1h` or plain seconds -> seconds, within `quantity` (one of the *SECONDS above)."""
    match = _DURATION.match(str(text))
    seconds = float(match.group(1)) * _UNIT[match.group(2)] if match else None
    if (
        seconds is None
        or not math.isfinite(seconds)
        or seconds < quantity.low
        or (quantity.above_low and seconds == quantity.low)
    ):
        kind = "positive" if quantity.above_low else "non-negative"
        raise UserError(f"{flag} {text!r}: expected a {kind} duration such as 30s, 500ms or 2m")
    if seconds > quantity.high:
        raise UserError(f"{flag} {text!r}: at most {_shown(quantity.high)} s ({quantity.why})")
    return seconds


# --- allowances and ratios (compare's gate, a suite's [gate]): an amount, a percentage, or a fraction ------------
@dataclass(frozen=True)
class Allowance:
    """How much worse a figure may get: an absolute amount, or a fraction of the baseline's figure."""

    value: float
    relative: bool = False

    def limit(self, baseline: float) -> float:
        return self.value * abs(baseline) if self.relative else self.value

    def __str__(self) -> str:
        return f"{self.value * 100:g}%" if self.relative else f"{self.value:g}"


def parse_allowance(text: str, flag: str, percent_only: bool = False) -> Allowance:
    """`0.01` (absolute) or `2%` (of the baseline); `percent_only` flags take `10%` or a fraction `0.1`."""
    raw = text.strip()
    relative = raw.endswith("%")
    try:
        value = float(raw[:-1] if relative else raw)
    except ValueError:
        raise UserError(f"{flag} {text!r}: expected a number or a percentage (0.01, 2%)") from None
    if not math.isfinite(value) or value < 0:
        raise UserError(f"{flag} {text!r}: must be a finite number >= 0")
    if relative:
        return Allowance(value / 100, relative=True)
    return Allowance(value, relative=percent_only)


def parse_error_rate(text: str, flag: str) -> float:
    """A fraction of requests, `0.01` or `1%`, in [0, 1]."""
    value = parse_allowance(text, flag, percent_only=True).value
    if value > 1:
        raise UserError(f"{flag} {text!r}: a fraction of requests is at most 1 (100%)")
    return value


def parse_ratio(text: str, flag: str) -> float:
    """A ratio of two figures (`0.95`, `--alpha`): a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise UserError(f"{flag} {text!r}: expected a number such as 0.95") from None
    if not math.isfinite(value) or value < 0:
        raise UserError(f"{flag} {text!r}: must be a finite number >= 0")
    return value


def at_most(what: str, value: float, quantity: Bounds, fix: str) -> None:
    """A product of several values (rate x duration, requests' bytes x copies) within `quantity`'s high bound."""
    if value > quantity.high:
        raise UserError(
            f"{what}: {value:,.0f} {quantity.noun}, at most {_shown(quantity.high)} ({quantity.why}); {fix}"
        )


def _shown(value: float) -> str:
    """9,223,372,036,854,775,807 and 0.5 alike: whole numbers with thousands separators, exactly."""
    if isinstance(value, int):
        return f"{value:,}"
    return f"{int(value):,}" if value.is_integer() else f"{value:g}"


def rate_text(rate: float) -> str:
    """A rate as a label shows it: 15 significant digits, so two rates typed apart stay apart (`5.0000001` and
    `5.0000002`, where `:g` shows both as 5), and no trailing zeros (`5`, `0.25`)."""
    return f"{rate:.15g}"
