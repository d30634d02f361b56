"""The results file's `load --interleave` records: a point measured in alternating windows on two endpoints,
its rounds, the figures paired over them and the verdict (docs/load.md); the windows themselves are `load_point`
records (bench/results/schema/load.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from bench.core.machine import MachineView  # the host during a round: load, busy and stolen CPU
from bench.core.resample import Interval  # a ratio and its interval
from bench.results.schema.conventions import WRITTEN_WHEN_SET


class InterleavedVerdict(StrEnum):
    """`load --interleave`'s verdict on a point (compare's rule on the gated figures' paired intervals): pass,
    fail, inconclusive; `not gated`: no limit given; `too busy`: undecided with too many rounds the machine's
    (bench/gate/anytime.py); `cannot judge`: a gated figure no round pair measured, or a record whose figures
    are not rates and latencies (fewer than 2 rounds, a figure not finite or below 0): neither a pass nor a
    figure (written from issue 50 on; every earlier record holds one of the others)."""

    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    NOT_GATED = "not gated"
    TOO_BUSY = "too busy"
    CANNOT_JUDGE = "cannot judge"


class PairedFigureName(StrEnum):
    """The figures `load --interleave` pairs: texts/s (gated by --min-throughput-ratio), p50 (reported) and p99
    (gated by --max-p99-increase)."""

    TEXTS_PER_S = "texts_per_s"
    P50 = "p50"
    P99 = "p99"


@dataclass
class InterleavedRound:
    """One round of `load --interleave`: the point measured on the baseline and the candidate back to back (in
    the order `first` says), each side's figures and the candidate ÷ baseline ratios; a figure a window lacks
    (no success, or too few answers for the quantile) is null, and so is its ratio."""

    round: int  # 1, 2, ... in the order measured
    first: str  # the endpoint measured first in this round (randomised per round, seeded by --seed)
    baseline_texts_per_s: float
    current_texts_per_s: float
    baseline_p50_ms: float | None
    current_p50_ms: float | None
    baseline_p99_ms: float | None
    current_p99_ms: float | None
    texts_per_s_ratio: float | None  # current ÷ baseline
    p50_ratio: float | None
    p99_ratio: float | None
    #: `--slice`: each side's slices' own texts/s in the order measured (null: a slice with no measured time); the
    #: k-th of each side ran back to back (X Y | Y X), one pair of texts/s's paired interval; left out: whole windows
    baseline_slices_texts_per_s: list[float | None] | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    current_slices_texts_per_s: list[float | None] | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: the client's event-loop lag p99 (ms) in each side's window, and the host during the round (of the two
    #: windows, the busier); `too_busy`: why the round's windows were the machine's, not the endpoints' (the lag
    #: past 10% of the round's median request, bench/core/machine.py): such a round is left out of the pairs
    baseline_loop_lag_p99_ms: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    current_loop_lag_p99_ms: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    machine: MachineView | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    too_busy: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: B answered, but fewer times than a p99 needs (100): its largest answer (ms), what its p99 is taken as at
    #: least where A has a p99 (a B too slow to answer 100 times is slow, not ungated); left out: B has a p99, or
    #: no answer
    current_p99_at_least_ms: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)


@dataclass
class PairedFigure:
    """One figure's paired ratio over the rounds (bench/gate/paired.py): the Hodges-Lehmann estimate of the rounds'
    ratios with the exact 95% Wilcoxon signed-rank interval (Student t below 6 rounds), its robust noise paired
    and unpaired, and the smallest step each sees."""

    figure: PairedFigureName  # texts_per_s | p50 | p99
    ratio: Interval  # current ÷ baseline: exp(Hodges-Lehmann log ratio), 95% signed-rank interval (t below 6 rounds)
    rounds: int  # rounds with the figure on both sides
    paired_noise: float  # 1.4826 × MAD of log(current / baseline) over the rounds (a robust sd)
    unpaired_noise: float  # sqrt(s(log baseline)² + s(log current)²), s = 1.4826 × MAD: the same windows, unpaired
    detectable: float  # the smallest regression ratio seen at 80% power, one-sided 2.5% false alarms, paired
    detectable_unpaired: float  # the same from the unpaired noise of the same windows
    limit: float | None  # compare's limit: --min-throughput-ratio, 1 + --max-p99-increase; None: not gated
    verdict: InterleavedVerdict | None  # pass | fail | inconclusive; None: not gated
    rounds_needed: int | None  # rounds to see the limit's step at 80% power, paired; None: no limit or > 1000
    rounds_needed_unpaired: int | None  # the same, unpaired
    #: the pairs judged when finer than rounds: texts/s of a run in slices, each round's k-th slice of A with B's
    #: k-th (back to back); the noise and smallest steps are per pair; left out: one pair per round
    pairs: int | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: texts/s: the rounds in which B answered nothing while A answered (it stopped answering): their ratio is 0,
    #: no interval of logs is said, and a limit fails; left out: none
    silent_rounds: list[int] | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: p99: the rounds whose B p99 is its largest answer (`current_p99_at_least_ms`): a fail stands, a pass is
    #: inconclusive (the ratio is at least what is said); left out: none
    at_least_rounds: list[int] | None = field(default=None, metadata=WRITTEN_WHEN_SET)


@dataclass
class InterleavedRoundRecord:
    """`load --interleave`: one round of a point, written as it finishes (before the next round starts), so a run
    killed mid-point keeps the rounds it measured; the point's `interleaved` record, written once its rounds end,
    holds them all and is the one read where it is there (bench/load/interleave_record.py)."""

    baseline: str
    current: str
    point: str
    latency: str  # service (closed loop) or scheduled (open loop): the latency whose p50 and p99 are paired
    round: InterleavedRound
    record: str = "interleaved_round"


@dataclass
class InterleavedRecord:
    """`load --interleave`: one point measured in alternating windows on two endpoints, paired round by round
    (docs/load.md); the windows themselves are the two endpoints' `load_point` records, one repeat per round."""

    baseline: str  # endpoint A (the first -e)
    current: str  # endpoint B (the second -e)
    point: str  # the point's label, e.g. `closed batch 1 conc 1`
    latency: str  # the latency whose p50 and p99 are paired: service (closed loop) or scheduled (open loop)
    rounds: list[InterleavedRound]
    figures: list[PairedFigure]
    #: pass | fail | inconclusive by compare's rule on the gated figures; `not gated`: no limit was given; `too
    #: busy`: undecided with too many rounds left out as the machine's (bench/gate/anytime.py); `cannot judge`:
    #: a gated figure no pair of rounds measured
    verdict: InterleavedVerdict
    #: figures a limit gates but fewer than two rounds have on both sides (a p99 of too few answers): not judged
    not_judged: list[str] = field(default_factory=list, metadata=WRITTEN_WHEN_SET)
    #: `--max-time`: the job's budget (s); its rounds went on until the interval cleared the limit or the budget
    #: was spent, so every interval is the anytime-valid one (bench/gate/anytime.py); left out: a fixed --rounds
    max_time_s: float | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    #: `--max-time`: why the rounds stopped (decided, the budget spent, stopped)
    stopped: str | None = field(default=None, metadata=WRITTEN_WHEN_SET)
    confidence: float = 0.95
    false_alarm: float = 0.025  # one-sided: a figure at its limit fails this often
    power: float = 0.8
    record: str = "interleaved"
