"""Intended send times, apart from the senders (as AIPerf separates its timing strategy from its workers).

An open-loop schedule is a sorted array of offsets in seconds from the point's start; a sender
must not move them when the server slows down — the gap between an intended time and the last
byte is the `scheduled` latency (wrk2's correction for coordinated omission). Arrivals:

- `constant`: every 1/rate s;
- `poisson`: exponential gaps with mean 1/rate;
- `gamma:CV`: gamma gaps with mean 1/rate and coefficient of variation CV (CV 1 = poisson,
  CV > 1 burstier, CV < 1 more regular), shape 1/CV², scale 1/(rate·shape).

A random schedule over a time span carries its label: the warm-up and the measured window each hold exactly
their rate × length sends (rounded), placed as the stream places them given that count (Poisson: uniform order
statistics; gamma: the gaps of a renewal stream normalised to the span). An unconditioned draw varies by √count
about it — a probe labelled 1.71/s sent 96 requests in its 68.5 s window, 1.40/s, and its verdict was a verdict
at a rate it did not carry (issue 45).

Workers split a schedule so that each worker's share is the same kind of stream (Ray actors and
`--workers` alike): a constant schedule round-robin (worker w takes every W-th time: the same constant
stream at rate/W, shifted in phase); a random one by independent thinning (each arrival goes to a worker
drawn uniformly, seeded), so a Poisson stream splits into independent Poisson streams of rate/W. Either
way the shares together are exactly the schedule, spread over the whole point.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from bench.core.errors import UserError


class ArrivalKind(StrEnum):
    """How an open loop's sends are spaced (the module's docstring says each)."""

    CONSTANT = "constant"
    POISSON = "poisson"
    GAMMA = "gamma"


@dataclass(frozen=True)
class Arrival:
    kind: ArrivalKind
    cv: float = 0.0  # gamma only

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ArrivalKind(self.kind))  # `Arrival("poisson")` holds the enum too

    def __str__(self) -> str:
        return f"gamma:{self.cv:g}" if self.kind == ArrivalKind.GAMMA else str(self.kind)


def parse_arrival(text: str) -> Arrival:
    kind, _, arg = text.partition(":")
    if kind in (ArrivalKind.CONSTANT, ArrivalKind.POISSON) and not arg:
        return Arrival(ArrivalKind(kind))
    if kind == ArrivalKind.GAMMA:
        try:
            cv = float(arg)
        except ValueError:
            cv = -1.0
        if cv > 0 and np.isfinite(cv):
            return Arrival(ArrivalKind.GAMMA, cv)
        raise UserError(f"--arrival {text!r}: gamma needs a positive coefficient of variation, as gamma:2")
    raise UserError(f"--arrival {text!r}: expected constant, poisson or gamma:CV")


def gaps(arrival: Arrival, rate: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """n inter-arrival gaps in seconds with mean 1/rate."""
    mean = 1.0 / rate
    if arrival.kind == ArrivalKind.CONSTANT:
        return np.full(n, mean)
    if arrival.kind == ArrivalKind.POISSON:
        return rng.exponential(mean, n)
    shape = 1.0 / (arrival.cv**2)
    return rng.gamma(shape, mean / shape, n)


def open_schedule(
    arrival: Arrival, rate: float, seconds: float | None, count: int | None, seed: int, measured_from: float = 0.0
) -> np.ndarray:
    """Send offsets (s) from the start: every arrival before `seconds`, or exactly `count` arrivals.

    With `seconds`, a random stream is drawn on [0, measured_from) and [measured_from, seconds) apart, each with
    exactly round(rate × its length) sends (`conditioned`): the warm-up and the measured window carry the rate
    they are labelled with. Constant arrivals go every 1/rate s from 0. With `count`, the first request goes at 0
    and the gaps follow. A generator seeded per point: a rerun offers the same load.
    """
    rng = np.random.default_rng(seed)
    if count is not None:
        if count <= 0:
            return np.zeros(0)
        return np.concatenate(([0.0], np.cumsum(gaps(arrival, rate, count - 1, rng))))
    if seconds is None:
        raise ValueError("open_schedule: give seconds or count")
    if arrival.kind == ArrivalKind.CONSTANT:
        offsets = np.arange(0.0, seconds, 1.0 / rate)
        return offsets[offsets < seconds]
    edges = [0.0, measured_from, seconds] if 0.0 < measured_from < seconds else [0.0, seconds]
    return np.concatenate([conditioned(arrival, rate, lo, hi, rng) for lo, hi in itertools.pairwise(edges)])


def conditioned(arrival: Arrival, rate: float, lo: float, hi: float, rng: np.random.Generator) -> np.ndarray:
    """round(rate × (hi − lo)) arrival times in [lo, hi) of a random stream given that count: n + 1 of its gaps
    scaled to the span (for Poisson, exactly the uniform order statistics a Poisson process has given its count;
    for gamma, the gaps keep their shape)."""
    n = round(rate * (hi - lo))
    if n <= 0:
        return np.zeros(0)
    spaced = np.cumsum(gaps(arrival, rate, n + 1, rng))
    times: np.ndarray = lo + (hi - lo) * spaced[:-1] / spaced[-1]
    return times


def share(
    offsets: np.ndarray, worker: int, workers: int, arrival: Arrival = Arrival(ArrivalKind.CONSTANT), seed: int = 0
) -> np.ndarray:
    """Worker `worker`'s share of a schedule: round-robin for constant arrivals, thinning for random ones."""
    if arrival.kind == ArrivalKind.CONSTANT or workers == 1:
        return offsets[worker::workers]
    # Every worker draws the same owners (same seed), so the shares partition the schedule.
    owners = np.random.default_rng([seed, workers]).integers(0, workers, offsets.size)
    mine: np.ndarray = offsets[owners == worker]
    return mine


def split_count(total: int, workers: int) -> list[int]:
    """`total` (users, requests, in-flight slots) over workers as evenly as integers allow."""
    return [total // workers + (1 if w < total % workers else 0) for w in range(workers)]
