"""The `--background` option read into a plan: the stream's endpoint, rates (fractions of a size run's saturation
with `--background-from`), batch, arrivals and timing, and the targets copied once per rate."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from pathlib import Path

from bench.core import values
from bench.core.errors import UserError
from bench.core.spec_grammar import parse_options
from bench.endpoints.spec import EndpointSpec
from bench.load.lengths import LengthsFrom, parse_lengths
from bench.load.points import MAX_ERROR_RATE
from bench.load.schedule import Arrival, ArrivalKind, parse_arrival
from bench.quality.under_load import loaded_name, rate_text
from bench.results.store import read_results
from bench.targets.base import TargetSpec

OPTIONS = ("rate", "batch", "arrival", "duration", "warmup", "timeout", "seed", "max_error_rate", "lengths")


class CountedBy(StrEnum):
    """How a size run counted its texts' length (its header's `tokens_source`)."""

    TOKENIZER = "tokenizer"
    WORDS = "words"


@dataclass(frozen=True)
class BackgroundSpec:
    endpoint: str  # the `-e` name the stream is sent to
    rates: list[float]  # requests/s, 0 (idle) first
    batch: int = 1
    arrival: Arrival = field(default_factory=lambda: Arrival(ArrivalKind.POISSON))
    min_duration_s: float = 5.0
    warmup_s: float = 1.0
    timeout_s: float = 30.0
    seed: int = 0
    max_error_rate: float = MAX_ERROR_RATE  # load's default: past it, the stream's runs are not measured under load
    sized: Sized | None = None  # --background-from: the size run the rates scale from, whose text length it sends
    lengths: LengthsFrom | None = None  # lengths=from:DATASET: text lengths drawn from DATASET's (before `sized`'s)


@dataclass(frozen=True)
class Sized:
    """What a `size` run measured its saturation at: the rate, and the texts it sent (their length, how counted)."""

    rate: float  # requests/s
    length: int | None  # tokens (or words) per text; None: the texts as they were
    counted_by: CountedBy  # how the size run counted `length`


def parse_background(text: str, saturation: float | None = None, sized: Sized | None = None) -> BackgroundSpec:
    """`NAME@rate=50,200&batch=8&arrival=poisson&duration=5s&warmup=1s` -> BackgroundSpec; rate 0 always first.
    A rate `0.5x` is that fraction of `saturation` (requests/s), or of `sized`'s rate (`--background-from`)."""
    if sized is not None:
        saturation = sized.rate
    where = f"--background {text!r}"
    name, at, query = text.partition("@")
    if not at or not name:
        raise UserError(f"{where}: expected ENDPOINT@rate=R1,R2[&batch=N&arrival=poisson|constant]")
    options = parse_options(query, where)
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise UserError(f"{where}: unknown option(s) {', '.join(unknown)} (known: {', '.join(OPTIONS)})")
    if "rate" not in options:
        raise UserError(f"{where}: rate=R1,R2,... is required (requests/s; 0 is the idle run, always measured)")
    given = [r.strip() for r in options["rate"].split(",")]
    if not any(given):
        raise UserError(f"{where}: rate= is empty: give requests/s, as rate=50,200 (rate=0 alone: the idle run only)")
    loaded = [r for r in (_rate(r, saturation, where) for r in given) if not _explicit_zero(r)]
    for r in loaded:  # 0 written as 0 is the idle run; a rate that a float reads as 0 is not
        if _float(r) == 0.0:
            raise UserError(f"{where}: rate {r} rounds to 0 requests/s (the idle run is rate 0, always measured)")
    spec = BackgroundSpec(
        endpoint=name,
        rates=[0.0, *values.number_list(f"{where}: rate", ",".join(loaded) or None, values.RATE)],
        batch=values.number(f"{where}: batch", options.get("batch", "1"), values.TEXTS_PER_REQUEST),
        arrival=_arrival(options.get("arrival", "poisson"), where),
        min_duration_s=values.duration(f"{where}: duration", options.get("duration", "5s"), values.SECONDS),
        warmup_s=values.duration(f"{where}: warmup", options.get("warmup", "1s"), values.WARMUP_SECONDS),
        timeout_s=values.duration(f"{where}: timeout", options.get("timeout", "30s"), values.TIMEOUT_SECONDS),
        seed=values.number(f"{where}: seed", options.get("seed", "0"), values.SEED),
        max_error_rate=values.number(
            f"{where}: max_error_rate", options.get("max_error_rate", str(MAX_ERROR_RATE)), values.ERROR_RATE
        ),
        sized=sized,
    )
    spec = replace(spec, lengths=_lengths(options.get("lengths"), where, spec.seed))
    for rate in spec.rates:  # a stream's send times are computed when it starts: refused now, not mid-run
        scheduled = rate * (spec.warmup_s + spec.min_duration_s)
        values.at_most(
            f"{where}: rate {rate:,.15g}/s", scheduled, values.SCHEDULED_REQUESTS, "lower rate, duration or warmup"
        )
    return spec


def _lengths(text: str | None, where: str, seed: int) -> LengthsFrom | None:
    """`lengths=from:DATASET`: the stream's text lengths drawn from DATASET's corpus (load's --lengths from:)."""
    if text is None:
        return None
    parsed = parse_lengths(text, seed)
    if len(parsed) != 1 or not isinstance(parsed[0], LengthsFrom):
        raise UserError(f"{where}: lengths={text}: expected one from:DATASET (as lengths=from:builtin:numpy-docs)")
    return parsed[0]


def check_background(spec: BackgroundSpec, endpoints: dict[str, EndpointSpec]) -> None:
    if spec.endpoint not in endpoints:
        known = ", ".join(endpoints) or "none given"
        raise UserError(f"--background {spec.endpoint}: no such endpoint (-e NAME=SPEC; given: {known})")


def _rate(text: str, saturation: float | None, where: str) -> str:
    """A rate as text: requests/s as given, or `Fx` as F times the measured saturation rate."""
    if not text.endswith("x"):
        return text
    if saturation is None:
        raise UserError(f"{where}: rate {text} is a fraction of saturation; give --background-from SIZE_RESULTS")
    fraction = _float(text[:-1])
    if fraction is None or not fraction > 0:
        raise UserError(f"{where}: rate {text}: expected a positive fraction of saturation, as 0.5x")
    rate = round(fraction * saturation, 3)
    if rate == 0:
        raise UserError(f"{where}: rate {text} of {saturation:g}/s rounds to 0 requests/s (to 0.001/s)")
    return rate_text(rate)


def saturation_of(path: Path, endpoint: str) -> Sized:
    """The saturation rate `ragbench size` measured for `endpoint` (its sizing record's highest passing rate), with
    the length of the texts it measured it at."""
    results = read_results(path)
    tokens_source = results.header.dataset.get("tokens_source")
    counted_by = CountedBy.TOKENIZER if tokens_source == CountedBy.TOKENIZER else CountedBy.WORDS
    found = [
        Sized(s.saturation.rate, s.length, counted_by)
        for s in results.sizing
        if s.endpoint == endpoint and s.saturation is not None and s.saturation.rate is not None
    ]
    if len(found) != 1:
        what = "no saturation rate" if not found else f"{len(found)} saturation rates (one per length)"
        # A size run of the same URL under another -e name is the usual cause: the names it holds say so.
        held = sorted({s.endpoint for s in results.sizing if s.saturation is not None and s.saturation.rate})
        holds = f"it holds {', '.join(held)}" if held else "it holds none"
        raise UserError(
            f"--background-from {path}: {what} for endpoint {endpoint} ({holds}: name the -e endpoint as the size run "
            "did); run size for it alone"
        )
    return found[0]


def past_saturation(spec: BackgroundSpec) -> list[str]:
    """A warning for each rate above the saturation the `size` run measured (`--background-from`): the server's
    queue grows for as long as the stream runs, so what is measured there is a backlog, and the server goes on
    serving it after the run (or after Ctrl-C) until it has drained."""
    if spec.sized is None:
        return []
    return [
        f"--background: rate {rate_text(rate)}/s is {rate / spec.sized.rate:.1f}x the saturation rate the size run "
        f"measured for {spec.endpoint} ({rate_text(spec.sized.rate)}/s): its queue grows while the stream runs, and "
        "the server goes on draining it after the run"
        for rate in spec.rates
        if rate > spec.sized.rate
    ]


def background_spec(text: str, size_results: Path | None) -> BackgroundSpec:
    """--background, its fractions of saturation read from --background-from where given."""
    if size_results is None:
        return parse_background(text)
    return parse_background(text, sized=saturation_of(size_results, text.partition("@")[0]))


def _explicit_zero(text: str) -> bool:
    """`0`, `0.0`: the idle run as written (`1e-400`, which a float also reads as 0, is not)."""
    try:
        return Decimal(text) == 0
    except InvalidOperation:
        return False


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # values.number_list names it


def _arrival(text: str, where: str) -> Arrival:
    if text not in (ArrivalKind.POISSON, ArrivalKind.CONSTANT):
        raise UserError(f"{where}: arrival={text}: expected poisson or constant")
    return parse_arrival(text)


def expand_targets(specs: list[TargetSpec], rates: list[float]) -> tuple[list[TargetSpec], dict[str, float]]:
    """Every target once per rate, rate by rate (idle first), and each copy's rate by its name."""
    pairs = [(replace(s, given_name=loaded_name(s.name, rate)), rate) for rate in rates for s in specs]
    return [s for s, _ in pairs], {s.name: rate for s, rate in pairs}
