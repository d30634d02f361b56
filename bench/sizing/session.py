"""The measuring session of `ragbench size`: one endpoint's points measured, written and sized to the budget.

Every point goes through the load sweep's own `measure_point` (same workers, histograms and records as
`ragbench load`) and is written to results.jsonl the moment it finishes, followed by its GPU telemetry window;
the `sizing` record with the recommendation comes last for each length; on a spent budget or a signal, the
record of what finished (a best so far).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import replace

from bench.core.interrupt import uninterruptible
from bench.load.endpoint import LoadEndpoint
from bench.load.lengths import DocumentsDraw, LengthsFrom
from bench.load.measure import measure_point, stop_if_unreachable
from bench.load.points import PointConfig, point_label, sized_point
from bench.load.schedule import ArrivalKind
from bench.load.share import ShareResult
from bench.load.stop_time import StopTime
from bench.load.workload import Workload
from bench.results.schema import GpuTelemetryRecord, LoadPointRecord, Loop, Op, SizingRecord
from bench.sizing.adapt import (
    best_so_far,
    collapse,
    decide_after,
    extension_s,
    lower_rate,
    modelled_start,
    on_the_slo,
    requests_to_decide,
    rescaled,
    seen_below,
    start_text,
    tighter_text,
)
from bench.sizing.adopt import adopt_measured
from bench.sizing.budget import Budget, BudgetSpent
from bench.sizing.closed import choose_closed, closed_capacity, closed_share, closed_sweep
from bench.sizing.judge import doubt, extended, verdict_line
from bench.sizing.outlets import Outlets as Outlets  # re-exported: the command builds one
from bench.sizing.plan import (
    GROWTH,
    LOWEST_RATE_FRACTION,
    MAX_PROBE_S,
    MODEL_GROWTH,
    OVERRUN,
    PROBE_SLOS,
    START_FRACTION,
    SizePlan,
    probe_duration,
    probe_settle_s,
    probe_warmup,
    steady_needs_text,
)
from bench.sizing.record import sizing_record
from bench.sizing.search import (
    Doubt,
    Probe,
    SearchRules,
    Undecided,
    measurements_left,
    saturation_search,
)
from bench.sizing.service_model import ServiceModel, fixed_service, service_model
from bench.sizing.slo import sig3
from bench.sizing.steady import Growth, failure_certain, growth

PLANNED_SHARE = 0.98  # of the budget left, what a probe plans on: its check (Budget.require) finds a hair less


class SizeSession:
    """One endpoint's measurements: each point measured, written, and its GPU window written after it; every
    point and probe sized to the budget left, the time still expected said after each."""

    def __init__(
        self, endpoint: LoadEndpoint, plan: SizePlan, workload: Workload, pool: Executor, budget: Budget, out: Outlets
    ):
        self.endpoint, self.plan, self.workload, self.pool, self.budget = endpoint, plan, workload, pool, budget
        self.writer, self.sampler, self.report, self.say = out.writer, out.sampler, out.report, out.say
        self.points: list[LoadPointRecord] = []
        self.search_left = 0  # measurements the saturation search still expects (its outlook), this one included
        self.probe_s = plan.duration_s  # the measured window of the search's next probe
        self.warmup_s = plan.warmup_s  # the warm-up of the search's next probe: long enough for its queue to settle
        self.capacity: float | None = None  # requests/s the chosen batch's closed loop reached at best
        # the chosen batch's measured service times and slots (service_model): the search's start and probe length
        self.model: ServiceModel | None = None
        self.start_rate, self.growth = 0.0, GROWTH  # where the search (or its last restart) started, its step
        self.seen: tuple[float, int] | None = None  # an inconclusive rate and the requests its window said decide it
        # probes whose pass does not stand for a steady queue, and why (steady_failure)
        self.unsteady: list[tuple[LoadPointRecord, Doubt]] = []
        self._growth: Growth | None = None  # the probe being measured: its latency part by part
        self._warmup_longest: float | None = None  # the point being measured: its slowest warm-up answer (s)
        self.stop: StopTime | None = None  # the pool's stop time (None on Ray): a failure certain ends a probe there
        self.cut: str | None = None  # the probe just measured: why its window ended early (None: it did not)

    def unsteady_reason(self, record: LoadPointRecord) -> Doubt | None:
        """Why `record`'s percentile, under the SLO, does not stand for the steady state (None: it does)."""
        return next((doubt for point, doubt in self.unsteady if point is record), None)

    def steady_failure(self, record: LoadPointRecord) -> Doubt | None:
        """Why a probe's verdict does not stand as measured (bench.sizing.judge.doubt): the machine too busy, a
        queue not steady, a window cut short, or an interval that straddles the SLO; None: it stands."""
        return doubt(self, record, self._growth)

    def _watch(self, shares: list[ShareResult]) -> None:
        """The probe's per-request rows: its scheduled latency part by part (steady.growth)."""
        rows = [share.request_log or {} for share in shares]
        intended = [t for log in rows for t in log.get("intended_s", [])]
        ends = [t for log in rows for t in log.get("end_s", [])]
        self._growth = growth(
            intended, [(e - i) * 1000.0 for i, e in zip(intended, ends, strict=True)], self.plan.slo.ms
        )
        longest = [share.warmup_longest_s for share in shares if share.warmup_longest_s is not None]
        self._warmup_longest = max(longest, default=None)

    def _measured(self, point: PointConfig) -> LoadPointRecord:
        """The point measured within the budget; when one request outlasted its window (a slow batch: nothing
        measured), again over a window that holds two such requests, said."""
        record = self._measure_once(point)
        took, window = self._warmup_longest, point.duration_s
        if record.requests.sent or record.requests.unsent or took is None or window is None or took <= window:
            return record
        stretched = replace(point, warmup_s=max(point.warmup_s, took), duration_s=float(math.ceil(2 * took)))
        self.say(
            f"size: {point_label(record)} measured nothing: a request took {took:.1f} s, longer than its {window:g} s "
            f"window; measuring it again over {stretched.duration_s:g} s"
        )
        return self._measure_once(stretched)  # once: a server slower still is a failed point, said as such

    def _measure_once(self, point: PointConfig) -> LoadPointRecord:
        self.budget.require((point.warmup_s + (point.duration_s or 0.0)) * OVERRUN)
        self._growth, self._warmup_longest, self.cut = None, None, None
        try:
            tick = self._until_certain(point)
            return measure_point(self.endpoint, point, self.workload, self.pool, tick=tick, on_shares=self._watch)
        finally:
            if self.stop is not None:
                self.stop.clear()

    def _until_certain(self, point: PointConfig) -> Callable[[], None]:
        """What the probe's driver checks as answers come: once more are over the SLO than a pass of its window
        allows (failure_certain), the window ends there (a failure costs seconds; a pass gets its whole window)."""
        stop, slo = self.stop, self.plan.slo
        if stop is None or point.loop != Loop.OPEN or not point.rate or not point.duration_s:
            return lambda: None
        planned = point.rate * point.duration_s
        stop.clear()
        stop.watch(slo.ms / 1000.0)

        def tick() -> None:
            answers, over = stop.counted()
            if self.cut is None and failure_certain(over, planned, slo.percentile):
                stop.set(time.perf_counter())
                self.cut = (
                    f"ended early: {over} of its first {answers} answers were over the SLO, more than a pass of "
                    f"about {sig3(planned)} requests allows"
                )

        return tick

    def measure(self, point: PointConfig) -> LoadPointRecord:
        record = self._measured(point)
        if record.loop == Loop.OPEN:
            failure = self.steady_failure(record)
            if failure is not None:
                self.unsteady.append((record, failure))
        finished = time.monotonic()
        with uninterruptible():  # a point written is a point the sizing answer knows of (adopt_measured)
            self.writer.write(record)
            self.points.append(record)
        self.report(record)
        if self.sampler is not None and self.sampler.available:
            # The measured window ends with the last answer, just before measure_point returned.
            windows = self.sampler.window(finished - record.duration_s, finished)
            self.writer.write(
                GpuTelemetryRecord(
                    endpoint=record.endpoint,
                    point=point_label(record),
                    start=finished - record.duration_s,
                    end=finished,
                    gpus=[w.to_dict() for w in windows],
                )
            )
        stop_if_unreachable(self.endpoint, record, "sizing")
        if record.loop == Loop.OPEN:
            self.search_left = max(0, self.search_left - 1)
            self.say(f"size: {self._verdict(record)}; {self._time_text(self._search_s())}")
        return record

    def _verdict(self, record: LoadPointRecord) -> str:  # `2.5/s offered, 2.49/s carried: failed — …`
        return verdict_line(record, self.plan.slo, self.unsteady_reason(record), self.cut)

    def _search_s(self) -> float:
        return self.search_left * (self.warmup_s + self.probe_s) * OVERRUN

    def _time_text(self, to_go_s: float) -> str:
        left = self.budget.left()
        capped = min(to_go_s, max(left, 0.0))
        budget = f" of the {sig3(self.budget.seconds)} s budget" if self.budget.seconds is not None else ""
        return f"{sig3(self.budget.spent)} s spent{budget}, about {sig3(capped)} s to go"

    def point(self, loop: Loop, size: int | DocumentsDraw, length: int | LengthsFrom | None) -> PointConfig:
        """A point of this run's op, timing and error limit; the loop's own settings are replaced in by the caller."""
        plan = self.plan
        config = PointConfig(
            op=plan.op,
            loop=loop,
            length=length,
            duration_s=plan.duration_s,
            warmup_s=plan.warmup_s,
            workers=plan.workers,
            timeout_s=plan.timeout_s,
            max_error_rate=plan.slo.max_error_rate,
        )
        return sized_point(config, size)

    def outlook(self, measurements: int) -> None:  # the search expects this many more: each probe's share
        self.search_left = measurements

    def plan_probe(self, rate: float) -> None:
        """The next probe's length at `rate`: what a steady pass needs there (warm-up, window) when the budget holds
        it, else its share of the budget left (a failure stands on any window: an empty queue only grows)."""
        plan = self.plan
        left = self.budget.left() / OVERRUN * PLANNED_SHARE
        settle = probe_settle_s(plan, rate, self.capacity)
        warm = probe_warmup(plan, rate, self.capacity)
        decide = requests_to_decide(self, rate)  # lengthens a window within its share: its own data says more
        need = warm + max(plan.probe_requests / rate, settle)
        if (decide is None or decide / rate > MAX_PROBE_S) and on_the_slo(self, rate):
            need = 0.0  # the SLO on the modelled percentile, no window decides it: its even share, for a failure
        below = self.seen[1] if self.seen is not None and rate < self.seen[0] else None
        if below is not None and below / rate <= MAX_PROBE_S:  # needs no more than at the undecided rate above
            need, decide = max(need, warm + below / rate), max(decide or 0, below)
        share = min(left, max(left / max(self.search_left, 1), need))
        extended = self._extension(rate)
        if extended is not None:  # an undecided measurement at this rate: a window twice as long when it fits
            share = min(left, max(share, extended))
        window_floor = max(plan.duration_s, PROBE_SLOS * plan.slo.ms / 1000.0)  # probe_duration's own floor
        self.warmup_s = probe_warmup(plan, rate, self.capacity, share - window_floor)
        requests = max(plan.probe_requests, decide or 0, math.ceil(rate * (extended or 0.0)))
        self.probe_s = probe_duration(rate, plan.duration_s, requests, share - self.warmup_s, plan.slo.ms, settle)

    def worth_measuring_again(self, record: LoadPointRecord) -> bool:
        """An undecided measurement is measured again when the machine was too busy, or when it was inconclusive
        and the service times' queue says a longer window pooled with it may decide it (adapt.extension_s)."""
        why = self.unsteady_reason(record)
        if why is not None and why.undecided == Undecided.INCONCLUSIVE:
            return self._extension(record.rate or 0.0) is not None
        return True

    def _extension(self, rate: float) -> float | None:
        """The warm-up and window a re-measure at `rate` gets after an inconclusive one (adapt.extension_s)."""
        last = next((p for p in reversed(self.points) if p.loop == Loop.OPEN and p.rate == rate), None)
        why = self.unsteady_reason(last) if last is not None else None
        if last is None or why is None or why.undecided != Undecided.INCONCLUSIVE:
            return None
        return extension_s(self, last, decide_after(self, last))

    def probe(
        self, rate: float, size: int | DocumentsDraw, length: int | LengthsFrom | None, seed: int
    ) -> LoadPointRecord:
        plan = self.plan
        self.plan_probe(rate)
        config = replace(self.point(Loop.OPEN, size, length), warmup_s=self.warmup_s, log_requests=True)
        record = self._extended(
            self.measure(replace(config, rate=rate, arrival=plan.arrival, seed=seed, duration_s=self.probe_s))
        )
        self.seen = seen_below(self, record, self.seen)
        return record

    def _extended(self, record: LoadPointRecord) -> LoadPointRecord:
        """`record` pooled with the inconclusive window before it at its rate (judge.extended), said."""
        both = extended(self, record, self._growth)
        if both is not record:
            self.say(f"size: its two windows together: {self._verdict(both)}")
        return both

    def saturation(self, best: LoadPointRecord | None, length: int | LengthsFrom | None, probes: list[Probe]) -> None:
        """The saturation search at the closed loop's chosen batch, from where the measured service distribution's
        queue meets the SLO; its probes go into `probes` as they finish."""
        plan = self.plan
        if best is None:
            return
        seeds = iter(range(plan.seed, plan.seed + 10_000))
        size = next(s for s in plan.sizes if str(s) == best.size_text)  # the batch, or the documents draw, chosen
        closed = [p for p in self.points if p.loop == Loop.CLOSED and p.size_text == str(size)]
        self.capacity = closed_capacity(closed)
        poisson = plan.arrival.kind == ArrivalKind.POISSON
        self.model = (service_model(closed, self.capacity) or fixed_service(self.capacity)) if poisson else None
        modelled = modelled_start(self) if poisson else None
        start_rate = modelled or best.throughput.requests_per_s * START_FRACTION
        self.start_rate = start_rate = max(float(f"{start_rate:.3g}"), 0.01)  # 3 digits: labels
        self.growth = growth_factor = MODEL_GROWTH if modelled else GROWTH
        self.outlook(measurements_left(None, None, plan.tolerance, growth_factor, plan.max_probes))
        self.plan_probe(start_rate)
        self.say(
            f"size: saturation search at batch {best.size_text} from {sig3(start_rate)} requests/s offered"
            + (f" ({start_text(self.model)} would meet the SLO up to there)" if modelled else "")
            + f", probes of about {sig3(self.warmup_s)} s warm-up and {sig3(self.probe_s)} s measured: "
            + self._time_text(self._search_s())
        )
        needs = steady_needs_text(plan, start_rate, self.capacity, self.budget.left())
        if needs:
            self.say(needs)
        saturation_search(
            lambda rate: self.probe(rate, size, length, next(seeds)),
            start_rate=start_rate,
            slo=plan.slo,
            rules=SearchRules(
                tolerance=plan.tolerance,
                max_probes=plan.max_probes,
                growth=growth_factor,
                min_rate=start_rate * LOWEST_RATE_FRACTION,
                majority=False,  # a failure left decided is one whose interval lies over the SLO (judge.doubt)
                extend=self.worth_measuring_again,
            ),
            probes=probes,
            outlook=self.outlook,
            unsteady=self.unsteady_reason,
            restart=self.collapsed,
            lower=self.lower,
        )

    def collapsed(self, probe: Probe) -> float | None:
        """The rate to restart from when `probe` saw the capacity collapse (adapt.collapse), which becomes it."""
        found = collapse(self, probe) if self.cut is None else None  # a window ended early: a queue still filling
        if found is None or self.capacity is None:
            return None
        now, start, probe.collapse = found
        self.model, self.capacity, self.start_rate = rescaled(self.model, self.capacity, now), now, start
        self.say(f"size: {probe.collapse}")
        return start

    def lower(self, rate: float) -> float:
        """The search's next rate down (adapt.lower_rate): one whose verdict the budget left can reach."""
        return lower_rate(self, rate, self.growth, self.budget.left() * PLANNED_SHARE)

    def bursts(self, length: int | LengthsFrom | None) -> None:
        """Open WebUI's ingestion bursts with what the search left of the budget (those that do not fit: said)."""
        if self.plan.op != Op.EMBED:
            return
        try:
            for batch in self.plan.burst_batches:
                for concurrency in self.plan.burst_concurrency:
                    point = self.point(Loop.BURST, batch, length)
                    self.measure(replace(point, concurrency=concurrency, burst=self.plan.burst))
        except BudgetSpent as spent:
            self.say(f"size: {spent} before every Open WebUI burst was measured; the saturation answer is whole")

    def size(self, length: int | LengthsFrom | None, telemetry: str) -> SizingRecord:
        """Closed sweep, the saturation search, then Open WebUI's bursts with whatever time is left. When the
        budget runs out, or a signal stops the run, the record of what finished (a best-so-far) is written too."""
        plan = self.plan
        start = len(self.points)
        probes: list[Probe] = []
        try:
            closed = closed_sweep(
                lambda b, c: self.measure(replace(self.point(Loop.CLOSED, b, length), concurrency=c)),
                plan.sizes,
                plan.max_concurrency,
                plan.slo,
                closed_share(self.budget, plan.warmup_s + plan.duration_s, self.say),
            )
            self.saturation(choose_closed(closed, plan.slo).best, length, probes)
            self.bursts(length)
        except BudgetSpent as spent:
            self.say(f"size: {spent}: the answer is the best so far, {best_so_far(probes)}")
            return self.record(length, telemetry, start, probes, str(spent))
        except KeyboardInterrupt as stop:
            with uninterruptible():  # the best-so-far is written whole before the run ends (130/143)
                # A signal after a point was written but before its probe took it: the point still counts.
                searched = [p for p in self.points[start:] if p.loop == Loop.OPEN]
                adopt_measured(probes, searched, plan.slo, self.unsteady_reason)
                self.writer.write(
                    self.record(
                        length, telemetry, start, probes, f"stopped by {stop.args[0] if stop.args else 'SIGINT'}"
                    )
                )
            raise
        return self.record(length, telemetry, start, probes, None)

    def record(
        self, length: int | LengthsFrom | None, telemetry: str, start: int, probes: list[Probe], stopped: str | None
    ) -> SizingRecord:
        spent = self.budget.spent
        return sizing_record(
            self.endpoint.spec.name,
            self.plan,
            self.points[start:],
            length,
            telemetry,
            probes,
            stopped,
            lambda saturation: tighter_text(self, saturation, spent),
        )
