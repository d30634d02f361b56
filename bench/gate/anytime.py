"""An interval for interleaved rounds that stays valid however often it is looked at (`load --interleave
--max-time`): the rounds go on until it clears the limit either way, so it is looked at after every round, and a
fixed-count interval (the signed-rank one of bench/gate/paired.py) looked at that often fails a ratio at its limit
far more often than its 2.5% (peeking: tests/gate/test_anytime.py measures it).

The choice: a **betting confidence sequence for the centre of the paired log ratios** (Waudby-Smith & Ramdas
2023, "Estimating means of bounded random variables by betting"; the symmetric-null form of Ramdas et al.'s
"Game-theoretic statistics"), with clipped scores:

- for a candidate centre m, each round r gives a score x_r(m): the mean over its pairs (a round of whole windows:
  one; a run in slices: its slice pairs) of clip((d - m) / (CLIP_SDS × s_r), -1, 1), d = log(B/A) of the pair,
  s_r a robust sd (1.4826 × MAD) of the pairs of the rounds before r only (predictable: the score's scale is
  fixed before the round is seen). Under "the centre is m" each pair's d is symmetric about m (the assumption
  the signed-rank interval makes: twins swap places by the coin that orders each round; X Y | Y X cancels drift
  within the round in the round's sum of scores, as an odd function of a symmetric noise averages to 0), so
  E[x_r(m) | earlier rounds] = 0 and x_r is in [-1, 1];
- two wealth processes per m, W+ = prod(1 + lam_r x_r) (betting the centre is above m) and W- = prod(1 - lam_r
  x_r) (below), each bet lam_r in [0, MAX_BET] set from the earlier rounds' scores only (aGRAPA: the running mean
  over the running second moment, shrunk to 0 early). Each is a nonnegative martingale under "centre m" (a
  supermartingale under "centre beyond m" on the bet's losing side), so by Ville's inequality it ever reaches
  1 / ALPHA with probability at most ALPHA, at any round, stopped by any rule;
- the interval: the m on a grid of log ratios whose W+ and W- never reached 1 / ALPHA so far (the running
  intersection), ALPHA = 2.5% a side: a 95% confidence sequence. The verdict is compare's rule on it (fail when
  it is all past the limit), so a ratio exactly at its limit fails at most 2.5% of the time over the whole run,
  however many rounds it takes.

Why this and not a normal-mixture sequence or alpha spending: no variance is assumed or known (the scale is
learnt as the rounds come), a stalled slice (a side at a third of its rate) moves a score by at most 1 as a sign
would, where it widens a mean's sequence; and unlike alpha spent over planned looks it may be looked at after
every round of a run whose length the budget, not a plan, decides. Its price: a fixed-count interval is tighter
at the same count (the bets must learn, and 1 / ALPHA = 40 is the wealth to reach): measured by simulation in
docs/ci.md ("Decided within a budget").

    low, high = anytime_interval([[-0.09, -0.11], [-0.10, -0.08], ...])   # log ratios, a list per round
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from bench.core.resample import CONFIDENCE
from bench.load.interleave_record import cannot_judge_text
from bench.results.schema import InterleavedRecord, InterleavedRound
from bench.results.schema.load import InterleavedVerdict

ALPHA = (1 - CONFIDENCE) / 2  # a side: the wealth to reach is 1 / ALPHA = 40
CLIP_SDS = 2.0  # a pair's score saturates at 2 robust sds from m: a stall counts as one sign, no more
MAX_BET = 0.9  # of the wealth, on a score in [-1, 1]: never all of it (a score of -1 would end the bet)
SCALE_PAIRS = 2  # pairs seen before a round is scored: fewer have no spread to scale it by
SCALE_FLOOR = 0.002  # log units (0.2%): a scale the timer's own granularity sets; below it scores would be signs
PRIOR_MOMENT = 0.25  # the bets' second moment before any score (one pseudo-score): small early bets
GRID_SPAN = math.log(4.0)  # the grid of centres covers ratios ×0.25 to ×4
GRID_STEP = 0.0005  # log units: the interval's ends to 0.05%
MAD_TO_SD = 1.4826


def grid(extra: Sequence[float] = ()) -> np.ndarray:
    """The candidate centres (log ratios), with `extra` (a limit's log) among them exactly."""
    points = np.arange(-GRID_SPAN, GRID_SPAN + GRID_STEP / 2, GRID_STEP)
    return np.unique(np.concatenate([points, np.asarray(extra, dtype=float)]))


def round_scores(rounds: Sequence[Sequence[float]], centres: np.ndarray) -> np.ndarray:
    """(rounds, centres): each round's mean clipped score at each centre, 0 for a round before SCALE_PAIRS pairs
    were seen (nothing to scale it by: no bet on it) or with no pair."""
    scores = np.zeros((len(rounds), len(centres)))
    seen: list[float] = []
    for r, pairs in enumerate(rounds):
        if len(seen) >= SCALE_PAIRS and len(pairs):
            earlier = np.asarray(seen)
            scale = max(MAD_TO_SD * float(np.median(np.abs(earlier - np.median(earlier)))), SCALE_FLOOR)
            d = np.asarray(pairs, dtype=float)[:, None]
            scores[r] = np.clip((d - centres[None, :]) / (CLIP_SDS * scale), -1.0, 1.0).mean(axis=0)
        seen += [float(x) for x in pairs]
    return scores


def best_wealth(scores: np.ndarray, side: float) -> np.ndarray:
    """Per centre, the highest wealth so far of betting `side` (+1: the centre is above m, -1: below) on the
    scores."""
    best: np.ndarray = np.exp(np.max(log_wealth(scores, side), axis=0, initial=0.0))
    return best


def log_wealth(scores: np.ndarray, side: float) -> np.ndarray:
    """(rounds, centres): the log of the wealth after each round of betting `side` on the scores, each bet from
    the earlier rounds' scores only (aGRAPA, shrunk to 0 before any score)."""
    signed = side * scores
    count = np.arange(scores.shape[0])[:, None]  # rounds before each round
    before = np.vstack([np.zeros((1, scores.shape[1])), np.cumsum(signed, axis=0)[:-1]])
    before_sq = np.vstack([np.zeros((1, scores.shape[1])), np.cumsum(signed**2, axis=0)[:-1]])
    mean = before / (count + 1)
    moment = (before_sq + PRIOR_MOMENT) / (count + 1)
    bets = np.clip(mean / moment, 0.0, MAX_BET)
    path: np.ndarray = np.cumsum(np.log1p(bets * signed), axis=0)
    return path


def anytime_interval(rounds: Sequence[Sequence[float]], extra: Sequence[float] = ()) -> tuple[float, float]:
    """(low, high) of the log ratio's 95% confidence sequence after these rounds (each a list of its pairs' log
    ratios, in the order measured); the hull of the centres not yet rejected by either side (nan, nan: all
    rejected, a 5% event under the model: no interval)."""
    centres = grid(extra)
    if not rounds:
        return float(centres[0]), float(centres[-1])
    scores = round_scores(rounds, centres)
    kept = (best_wealth(scores, 1.0) < 1 / ALPHA) & (best_wealth(scores, -1.0) < 1 / ALPHA)
    if not kept.any():
        return math.nan, math.nan
    inside = centres[kept]  # a grid point's step out on each side: the centre between two grid points is covered
    return float(inside.min()) - GRID_STEP, float(inside.max()) + GRID_STEP


MIN_USABLE_ROUNDS = 6  # fewer rounds carried: too few to decide on, whatever the interval says
BUSY_SHARE = 0.25  # a quarter of the rounds or more left out: the machine, not the endpoints, kept it undecided


def too_busy_to_decide(rounds: Sequence[InterleavedRound], undecided: bool) -> str | None:
    """`this machine was too busy to decide (...)` when the rounds ended undecided (inconclusive, or nothing
    left to judge) with fewer than MIN_USABLE_ROUNDS rounds carried or BUSY_SHARE of them left out as the
    machine's; None otherwise (a verdict, or an inconclusive one that is the endpoints' noise)."""
    busy = [r for r in rounds if r.too_busy is not None]
    usable = len(rounds) - len(busy)
    if not undecided or not busy or (usable >= MIN_USABLE_ROUNDS and len(busy) < BUSY_SHARE * len(rounds)):
        return None
    lags = [x for r in busy for x in (r.baseline_loop_lag_p99_ms, r.current_loop_lag_p99_ms) if x is not None]
    loads = [r.machine.load for r in busy if r.machine is not None and r.machine.load is not None]
    figure = f"{len(busy)} of {len(rounds)} rounds left out"
    figure += f", the client's event loop up to {max(lags):.0f} ms late at p99" if lags else ""
    figure += f", load up to {max(loads):.1f} on {busy[0].machine.cores} cores" if loads and busy[0].machine else ""
    return f"this machine was too busy to decide ({figure})"


def verdict_text(record: InterleavedRecord) -> str:
    """The verdict in capitals; `too busy`: THIS MACHINE WAS TOO BUSY TO DECIDE (figure), neither pass nor fail;
    `cannot judge`: CANNOT JUDGE and why (never a pass)."""
    if record.verdict == InterleavedVerdict.CANNOT_JUDGE:
        return cannot_judge_text(record)
    if record.verdict != InterleavedVerdict.TOO_BUSY:
        return record.verdict.upper()
    said = too_busy_to_decide(record.rounds, True) or "this machine was too busy to decide"
    head, _, figure = said.partition(" (")
    return head.upper() + (f" ({figure}" if figure else "")


def budget_lines(record: InterleavedRecord) -> list[str]:
    """`--max-time`: the interval's kind, why the rounds stopped, and each round left out as the machine's."""
    lines = []
    if record.max_time_s is not None:
        lines.append(
            f"  --max-time {record.max_time_s:g}s: anytime-valid 95% intervals (bench/gate/anytime.py), looked at "
            f"after every round; {record.stopped or 'stopped before the budget'}"
        )
    lines += [f"  round {r.round} left out: {r.too_busy}" for r in record.rounds if r.too_busy is not None]
    return lines
