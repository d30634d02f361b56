"""How often `load --interleave` sees a 10% step, and how rarely it fails twins (issue 36).

    PYTHONPATH=. .venv/bin/python benchmarks/interleave_power.py --jobs 6 [--rounds 6] [--window 1.5s]
        [--warmup 0.5s] [--slice 0.25s] [--service-ms 20] [--server sleep|cpu] [--step 1.1] [--limit 0.95]
        [--concurrency 1] [--hog 2] [--out reports/interleave-power]
    PYTHONPATH=. .venv/bin/python benchmarks/interleave_power.py --simulate 100 [--noise 0.03] [--rounds 10]
        [--contamination 0.05] [--slices 2]
    PYTHONPATH=. .venv/bin/python benchmarks/interleave_power.py --rejudge reports/il5 [--limit 0.95]
    PYTHONPATH=. .venv/bin/python benchmarks/interleave_power.py --simulate 1000 --sequential 40 [--limit 0.97]
    PYTHONPATH=. .venv/bin/python benchmarks/interleave_power.py --jobs 10 --max-time 120s --slice 0.5s ...

`--sequential MAX` (with --simulate): jobs looked at after every round until decided or MAX rounds, as `load
--interleave --max-time` runs them (benchmarks/interleave_sequential.py). `--max-time BUDGET` (real jobs): each job
runs `load --interleave --max-time BUDGET` instead of --rounds; the summary says the rounds each took, its wall
time against the budget, and the jobs whose verdict was "too busy".

    # ≥ 40 jobs of each in four shards side by side (each its own servers; one CPU-bound neighbour), then the
    # summary of all of them, and the same servers through separate runs and `compare BASE CUR`:
    for s in "step 0 1" "step 21 0" "twins 0 0" "twins 21 0"; do set -- $s
        nohup .venv/bin/python benchmarks/interleave_power.py --only $1 --first $2 --jobs 21 --rounds 20 \
            --window 1s --warmup 0.25s --hog $3 --out reports/ip40 > reports/ip40-$1-$2.log 2>&1 &
    done
    PYTHONPATH=. .venv/bin/python benchmarks/interleave_power.py --read --jobs 42 --rounds 20 --window 1s \
        --out reports/ip40

    # the same with the finer grain (load --slice: each window in 4 slices, A's and B's alternated X Y Y X):
    # add `--slice 0.25s` to the four shards' flags (and `--out reports/ip40-slice`), then --read as above.

Real mode starts three loopback queue servers (tests/sizing/queue_server.py: one FIFO slot, SERVICE ms per
request): A, its twin, and B, `--step` times slower. `--server sleep` (the default): the service is a wait, a
server whose compute is not on this CPU (a TEI on a GPU); `--server cpu`: a busy loop timed here to SERVICE ms
(the fastest of 15 tries), the same length for A and its twin, so the CPU's neighbours slow the server too.
And `--hog N` CPU-bound neighbours whose load drifts over `--hog-period` s. Each job is one `ragbench load
--interleave` process (`--concurrency 1` by default: the client's turnaround on the busy CPU is in every request,
so the machine's state moves the figures; at 4, a sizing user's saturation, the sleep server's queue is never
empty while the client answers within 3 service times), A vs B then A vs its twin,
gated by `--min-throughput-ratio LIMIT`. It prints how many A/B jobs were flagged (verdict fail), how many A/A
jobs failed, each job's wall time, and the paired beside the unpaired noise of texts/s of the same windows (the
median over the jobs), with the machine's load average before and after.

Simulated mode draws `--simulate N` A/A and N A/B jobs of `--rounds` rounds of `--slices` slices a side (X Y Y X,
as load --slice runs them) whose machine drifts by 30% over the job and moves ±20% per round (shared by both
sides), each round's windows adding `--noise` (log sd of a round's ratio; a slice's share of it is larger), and
judges their texts/s three ways (JUDGES: the Student t interval on the rounds, used before 2026-12-06; the
signed-rank interval on the rounds; the signed-rank interval on the slice pairs, the gate's now): the A/A false
alarms, the A/B detections, and the false-alarm rate of a ratio exactly at the limit (at most 2.5% by
construction: one side of the 95% interval). `--contamination P`: a share P of the slices has a client stall,
that slice's texts/s × U(0.3, 0.7) (issue 36's descheduled rounds).

`--rejudge FOLDER...` reads the jobs a real run left (each `step-*` and `twins-*` folder's interleaved record)
and judges their texts/s again the same three ways at `--limit`: A/B flagged and A/A failed, each way.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.gate import paired  # noqa: E402
from bench.gate.noise import Verdict  # noqa: E402
from bench.results.schema import EndStatus, InterleavedRecord, InterleavedRound, PairedFigure  # noqa: E402
from bench.results.store import read_results  # noqa: E402
from benchmarks.interleave_judges import rejudge, simulate, simulated_rounds  # noqa: E402
from benchmarks.runner import busy_iterations, start_hogs, start_queue_server  # noqa: E402
from tests.harness.process import ManagedProcess, stop_process  # noqa: E402


def start_server(service_ms: float, iterations: int, log: Path) -> tuple[str, ManagedProcess]:
    """A queue server: its service a wait of `service_ms` (iterations 0: the compute is elsewhere, a GPU), or
    `iterations` of a busy loop (CPU work: a neighbour slows it too)."""
    kind = ["--busy-iterations", str(iterations)] if iterations else ["--service-ms", str(service_ms)]
    return start_queue_server(log, *kind)


def job(a: str, b: str, args: argparse.Namespace, out: Path, seed: int) -> tuple[InterleavedRecord, float, int] | None:
    """One interleaved job as a user runs it (its own --seed: its own order of the rounds): its record, wall time
    and exit code; None (said, kept out of the figures) when it ended with no verdict (exit 2 or 3)."""
    count = ["--max-time", args.max_time] if args.max_time else ["--rounds", str(args.rounds)]
    flags = ["--interleave", *count, "--window", args.window, "--warmup", args.warmup]
    flags += ["--slice", args.slice] if args.slice else []
    flags += [
        "--overwrite",
        "--concurrency",
        str(args.concurrency),
        "--min-throughput-ratio",
        str(args.limit),
        "--seed",
        str(seed),
    ]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "bench", "load", "-e", f"a=tei@{a}", "-e", f"b=tei@{b}", *flags, "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wall = time.monotonic() - started
    if done.returncode not in (0, 1):
        print(f"job {out} exited {done.returncode}: {done.stderr.strip()[-500:]}: left out", flush=True)
        return None
    (record,) = read_results(out / "results.jsonl").interleaved
    return record, wall, done.returncode


def _throughput(record: InterleavedRecord) -> PairedFigure | None:
    """The record's texts/s figure; None where every round was left out (too busy: nothing judged)."""
    return next((f for f in record.figures if f.figure == "texts_per_s"), None)


def real(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `kill`: the servers and the hog stopped too
    print(f"load average before: {os.getloadavg()}", flush=True)
    iterations = args.iterations or (busy_iterations(args.service_ms) if args.server == "cpu" else 0)
    if iterations:
        print(f"cpu servers: {iterations} iterations per request (B: x{args.step:g})", flush=True)
    servers = [
        start_server(ms, round(iterations * factor), out / f"server-{args.only or 'all'}-{args.first}-{i}.log")
        for i, (ms, factor) in enumerate(
            ((args.service_ms, 1.0), (args.service_ms, 1.0), (args.service_ms * args.step, args.step))
        )
    ]
    (a, _), (twin, _), (slow, _) = servers
    hogs = start_hogs(args.hog, args.hog_period)
    found: dict[str, list[tuple[InterleavedRecord, float, int]]] = {"step": [], "twins": []}
    kinds = [(name, b) for name, b in (("step", slow), ("twins", twin)) if args.only in (None, name)]
    try:
        for k in range(args.first, args.first + args.jobs):
            for name, b in kinds:
                found_job = job(a, b, args, out / f"{name}-{k}", args.seed + k)
                if found_job is None:
                    continue
                record, wall, code = found_job
                (out / f"{name}-{k}" / "wall.txt").write_text(f"{wall:.3f} {code}\n")
                found[name].append((record, wall, code))
                f = _throughput(record)
                said = paired.figure_line(f) if f is not None else "no texts/s figure (every round left out)"
                print(
                    f"{name} job {k + 1}/{args.first + args.jobs}: {record.verdict} (exit {code}) in {wall:.0f} s, "
                    f"{len(record.rounds)} rounds ({record.stopped}); {said}",
                    flush=True,
                )
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        for _, proc in servers:
            stop_process(proc)
    print(f"load average after: {os.getloadavg()}")
    summarize(found, args)


def read_back(args: argparse.Namespace) -> None:
    """The summary of jobs earlier runs left under --out (jobs --first to --first + --jobs - 1; each job's wall
    time and exit code from its wall.txt, 0 where an older run kept none)."""
    found: dict[str, list[tuple[InterleavedRecord, float, int]]] = {"step": [], "twins": []}
    for name in found:
        for k in range(args.first, args.first + args.jobs):
            results = Path(args.out) / f"{name}-{k}" / "results.jsonl"
            if not results.is_file():
                continue
            run = read_results(results)
            if run.end is None or run.end.status != EndStatus.COMPLETE:  # a job cut short is no verdict
                print(f"{results}: not complete ({run.end.error if run.end else 'no end record'}): left out")
                continue
            kept = results.parent / "wall.txt"
            wall, code = kept.read_text().split() if kept.is_file() else ("0", "0")
            found[name] += [(r, float(wall), int(code)) for r in run.interleaved]
    if not found["step"] and not found["twins"]:
        print(f"interleave_power: error: no complete step-K or twins-K job under {args.out}", file=sys.stderr)
        sys.exit(2)
    summarize(found, args)


def summarize(found: dict[str, list[tuple[InterleavedRecord, float, int]]], args: argparse.Namespace) -> None:
    step, twins = found["step"], found["twins"]
    flagged = sum(r.verdict == Verdict.FAIL for r, _, _ in step)
    false = sum(r.verdict == Verdict.FAIL for r, _, _ in twins)
    figures = [f for f in (_throughput(r) for r, _, _ in step + twins) if f is not None]
    walls = [w for _, w, _ in step + twins]
    pct = [math.expm1(f.paired_noise) for f in figures], [math.expm1(f.unpaired_noise) for f in figures]
    print(f"{args.step:g}x slower B, {args.rounds} rounds of {args.window} windows, limit {args.limit}:")
    print(f"  flagged {flagged} of {len(step)} A/B jobs; A/A (twins) failed {false} of {len(twins)}")
    inconclusive = [sum(r.verdict == Verdict.INCONCLUSIVE for r, _, _ in jobs) for jobs in (step, twins)]
    print(f"  inconclusive: {inconclusive[0]} A/B, {inconclusive[1]} A/A")
    busy = [sum(r.verdict == "too busy" for r, _, _ in jobs) for jobs in (step, twins)]
    rounds = [len(r.rounds) for r, _, _ in step + twins]
    print(f"  too busy to decide: {busy[0]} A/B, {busy[1]} A/A; rounds per job: median {statistics.median(rounds):.0f}")
    if step:
        per = sorted(len(r.rounds) for r, _, _ in step)
        print(f"  A/B rounds per job: median {statistics.median(per):.0f}, max {per[-1]}")
    print(f"  job wall time: median {statistics.median(walls):.0f} s, max {max(walls):.0f} s")
    if not figures:  # every job's rounds left out as the machine's: no noise to say
        return
    print(
        f"  texts/s noise per pair (a slice pair, or a round of whole windows), median over jobs: "
        f"paired ±{statistics.median(pct[0]):.1%} "
        f"(range {min(pct[0]):.1%}–{max(pct[0]):.1%}), unpaired ±{statistics.median(pct[1]):.1%} "
        f"(range {min(pct[1]):.1%}–{max(pct[1]):.1%})"
    )
    separate_runs(step, twins)
    client_gap(step, args)
    detect = [f.detectable for f in figures], [f.detectable_unpaired for f in figures]
    print(
        f"  smallest step seen at 80% power, median: paired ×{statistics.median(detect[0]):.3f}, "
        f"unpaired ×{statistics.median(detect[1]):.3f}"
    )


def separate_runs(
    step: list[tuple[InterleavedRecord, float, int]], twins: list[tuple[InterleavedRecord, float, int]]
) -> None:
    """The same jobs read as separate runs: each job's A (and its twin) as one run of its own, a minute or more
    from the next. The spread over the jobs of a run's mean texts/s is the noise between runs; the spread over
    the jobs of the twins' paired ratio is the interleaved gate's."""
    runs = [_job_mean(r.rounds, "baseline") for r, _, _ in step + twins]
    runs += [_job_mean(r.rounds, "current") for r, _, _ in twins]
    ratios = [math.log(f.ratio.mean) for f in (_throughput(r) for r, _, _ in twins) if f is not None]
    if len(runs) < 3 or len(ratios) < 2:
        return
    between = math.sqrt(2) * statistics.stdev(math.log(x) for x in runs)  # a ratio has a run on each side
    print(
        f"  separate runs (each job's A or twin as one run, {len(runs)} runs): sd of log(run / run) "
        f"±{math.expm1(between):.1%}; the twins' interleaved ratio over {len(ratios)} jobs: sd of its log "
        f"±{math.expm1(statistics.stdev(ratios)):.1%}"
    )


def client_gap(step: list[tuple[InterleavedRecord, float, int]], args: argparse.Namespace) -> None:
    """What the step is end to end. The server answers one request at a time, so A's time per answer (1000 ÷
    texts/s) is its service S plus the time it sat idle between requests: at concurrency 1 the client's whole
    turnaround on the busy machine (on both sides alike, so B's texts/s is (S + gap) / (S × step + gap) of
    A's); at a concurrency that keeps the server busy, none. --server cpu: the gap is also the CPU the server
    did not get. The measured step: the median of the A/B jobs' paired ratios."""
    gaps = []
    for record, _, _ in step:
        per_answer = [1000 / r.baseline_texts_per_s for r in record.rounds if r.baseline_texts_per_s]
        if per_answer:
            gaps.append(statistics.median(per_answer) - args.service_ms)
    if not gaps:
        return
    service = args.service_ms

    def end_to_end(gap: float) -> float:
        return (service + gap) / (service * args.step + gap)

    wide = [end_to_end(g) for g in gaps]
    measured = [f.ratio.mean for f in (_throughput(r) for r, _, _ in step) if f is not None] or [math.nan]
    print(
        f"  A/B jobs: A's time per answer beyond its {service:g} ms of service, median {statistics.median(gaps):.1f} "
        f"ms (range {min(gaps):.1f}–{max(gaps):.1f}): the {args.step:g}x server step is ×"
        f"{end_to_end(statistics.median(gaps)):.3f} end to end at the median (×{min(wide):.3f}–{max(wide):.3f}); "
        f"{sum(w < args.limit for w in wide)} of {len(wide)} jobs' steps past the limit ×{args.limit:g}; measured "
        f"ratio median ×{statistics.median(measured):.3f} (×{min(measured):.3f}–{max(measured):.3f})"
    )


def _job_mean(rounds: list[InterleavedRound], side: str) -> float:
    """A side's texts/s over a job: the geometric mean of its windows."""
    values = [getattr(r, f"{side}_texts_per_s") for r in rounds]
    return math.exp(statistics.fmean(math.log(v) for v in values if v > 0))  # a window with no answer: no figure


def compare_separately(args: argparse.Namespace) -> None:
    """The same servers through separate runs and `compare BASE CUR` (issue 36's side by side): job k's A/A run
    (`twins-k`: a = A, b = the twin) as the baseline, job k + --offset's A/B run (`step-k`: a = A, b = 10% slower;
    jobs --first to --first + --jobs - 1, wrapping round)
    as the current one, minutes apart: compare's check `a` is an A/A pair of separate runs, its check `b` the 10%
    step. compare's own rule (--min-throughput-ratio --limit, each run's 20 windows as its repeats). Each
    comparison is kept (compare-K-J.json) and not run again."""
    out, jobs, first = Path(args.out), args.jobs, args.first
    verdicts: dict[str, list[str]] = {"a": [], "b": []}
    ratios: dict[str, list[float]] = {"a": [], "b": []}
    for k in range(first, first + jobs):
        j = first + (k - first + args.offset) % jobs
        base, cur = out / f"twins-{k}", out / f"step-{j}"
        if not (_complete(base) and _complete(cur)):
            continue
        kept = out / f"compare-{k}-{j}.json"
        if not kept.is_file():
            argv = [sys.executable, "-m", "bench", "compare", str(base), str(cur), "--format", "json"]
            done = subprocess.run(
                [*argv, "--min-throughput-ratio", str(args.limit)],
                capture_output=True,
                text=True,
                check=False,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            if done.returncode not in (0, 1):
                print(f"compare {base} {cur} exited {done.returncode}: {done.stderr.strip()[-300:]}")
                continue
            kept.write_text(done.stdout)
        for check in json.loads(kept.read_text())["checks"]:
            side = check["figures"]["endpoint"]
            verdicts[side].append(check["figures"]["noise"][0]["verdict"])
            ratios[side].append(math.log(check["figures"]["throughput_ratio"]))
    for side, name in (("b", f"{args.step:g}x slower B"), ("a", "A/A")):
        found = verdicts[side]
        if len(found) < 2:
            continue
        print(
            f"  separate runs + compare, {name}: fail {found.count('fail')}, inconclusive "
            f"{found.count('inconclusive')}, pass {found.count('pass')} of {len(found)}; ratio ×"
            f"{math.exp(statistics.fmean(ratios[side])):.3f}, sd of its log "
            f"±{math.expm1(statistics.stdev(ratios[side])):.1%}"
        )


def _complete(folder: Path) -> bool:
    results = folder / "results.jsonl"
    if not results.is_file():
        return False
    end = read_results(results).end
    return end is not None and end.status == EndStatus.COMPLETE


def options() -> argparse.ArgumentParser:
    """The script's flags: simulated mode's, then real jobs' (see the module's text)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--simulate", type=int, default=0, help="simulated jobs instead of real ones")
    parser.add_argument("--noise", type=float, default=0.03, help="simulated: paired noise (log sd of a ratio)")
    parser.add_argument(
        "--contamination",
        type=float,
        default=0.0,
        help="simulated: share of slices with a client stall (that slice's texts/s x U(0.3, 0.7))",
    )
    parser.add_argument("--slices", type=int, default=2, help="simulated: slices per window (1: whole windows)")
    parser.add_argument(
        "--sequential", type=int, default=0, help="simulated: look after every round, up to this many (--max-time)"
    )
    parser.add_argument("--max-time", help="real jobs: load --interleave --max-time BUDGET instead of --rounds")
    parser.add_argument(
        "--rejudge", nargs="+", metavar="FOLDER", help="judge the recorded jobs under FOLDER again, old and new"
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--window", default="1.5s")
    parser.add_argument("--warmup", default="0.5s")
    parser.add_argument("--slice", help="load --slice: each window cut into slices alternated with the other side's")
    parser.add_argument("--service-ms", type=float, default=20.0)
    parser.add_argument(
        "--server",
        choices=("sleep", "cpu"),
        default="sleep",
        help="sleep: the service is a wait (compute off this CPU, a GPU); cpu: a busy loop of --service-ms (CPU work)",
    )
    parser.add_argument("--iterations", type=int, default=0, help="--server cpu: the busy loop's length (0: timed)")
    parser.add_argument("--step", type=float, default=1.1, help="B's service time over A's")
    parser.add_argument("--limit", type=float, default=0.95, help="--min-throughput-ratio")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=1, help="1: the client's turnaround is in every request")
    parser.add_argument("--hog", type=int, default=0, help="CPU-bound neighbours whose load drifts")
    parser.add_argument("--hog-period", type=float, default=120.0, help="seconds of one drift cycle of the hogs")
    parser.add_argument("--out", default="reports/interleave-power")
    parser.add_argument("--only", choices=("step", "twins"), help="run one kind of job only (shards side by side)")
    parser.add_argument("--first", type=int, default=0, help="number of the first job (shards: seed and folder)")
    parser.add_argument("--read", action="store_true", help="summarize the jobs already under --out, run none")
    parser.add_argument("--offset", type=int, default=10, help="--read: job k's A/A run against job k+OFFSET's A/B")
    return parser


def main() -> None:
    args = options().parse_args()
    if args.rejudge:
        rejudge(args.rejudge, args.limit)
    elif args.simulate and args.sequential:
        from benchmarks.interleave_sequential import simulate_sequential

        simulate_sequential(args, simulated_rounds)
    elif args.simulate:
        simulate(args)
    elif args.read:
        read_back(args)
        compare_separately(args)
    else:
        real(args)


if __name__ == "__main__":
    main()
