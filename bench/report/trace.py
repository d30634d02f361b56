"""The report of `load --trace`: per route the verdict first, then the recording beside its replay — calls,
latency p50 / p99, arrivals (inter-arrival KS p, sends behind their time), texts per call. Built from
trace-replay.json alone (bench/commands/load_trace.py writes it, bench/load/trace_compare.py fills each route).

The verdict is the issue's fidelity target (docs/traffic.md): every call answered, the texts per call as recorded,
the inter-arrival gaps of the recorded shape (KS p > 0.05, gaps compared to within 1 ms) and, at `--speed 1` only,
the replayed p50 and p99 within 10% of the recorded ones (faster, the server meets another load: its latency is the
measurement, not a check).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from html import escape
from pathlib import Path

from bench.core.errors import InputError
from bench.core.secrets import mask
from bench.load.trace_compare import RouteComparison
from bench.report.page import html_page, html_table, md_table
from bench.results.outdir import REPLAY_FILE as REPLAY_FILE
from bench.results.outdir import RESULTS_FILE
from bench.results.schema import TraceSizeRecord
from bench.results.store import Results

LATENCY_TOLERANCE = 0.10  # replayed p50 and p99 within 10% of the recording's
KS_MIN = 0.05  # inter-arrival gaps: a KS p at or below this rejects the recorded shape


@dataclass(frozen=True)
class ReplaySettings:
    """How `load --trace` replayed: the trace file, at what speed, how many loops (trace-replay.json)."""

    trace: str
    speed: float
    loops: int | str  # a whole number; the file's own value where it is not one


def read_replay(path: Path) -> tuple[ReplaySettings, list[RouteComparison]]:
    """trace-replay.json: its settings (trace, speed, loops) and each route's comparison; a file that is not
    one: one line, exit 2."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        names = [f.name for f in fields(RouteComparison)]
        routes = [RouteComparison(**{name: row[name] for name in names}) for row in data["routes"]]
        settings = ReplaySettings(str(data["trace"]), float(data["speed"]), data["loops"])
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(path, f"not a load --trace summary ({type(exc).__name__}: {exc})") from None
    return settings, routes


def problems(row: RouteComparison, speed: float) -> list[str]:
    """What keeps a route's replay from the fidelity target; empty: faithful."""
    found = []
    if row.errors:
        found.append(f"{row.errors} of {row.calls_replayed} calls failed")
    if not row.texts_identical:
        found.append(f"texts per call differ ({row.texts_replayed} sent, {row.texts_recorded} recorded)")
    if row.arrivals_ks_p is not None and row.arrivals_ks_p <= KS_MIN:
        found.append(f"inter-arrival gaps not of the recorded shape (KS p {row.arrivals_ks_p:.3f} ≤ {KS_MIN})")
    if speed == 1.0:
        for name, recorded, replayed in (
            ("p50", row.p50_recorded_ms, row.p50_replayed_ms),
            ("p99", row.p99_recorded_ms, row.p99_replayed_ms),
        ):
            if replayed is None:
                found.append(f"no {name} replayed (no call answered)")
            elif abs(replayed - recorded) > LATENCY_TOLERANCE * recorded:
                found.append(f"{name} {_change(recorded, replayed)} from the recording (beyond ±10%)")
    return found


def verdict(row: RouteComparison, speed: float) -> str:
    found = problems(row, speed)
    if found:
        return "NOT FAITHFUL: " + "; ".join(found)
    latency = "p50 and p99 within 10%" if speed == 1.0 else f"latency not compared at ×{speed:g}"
    return f"FAITHFUL: every call answered, texts per call as recorded, arrivals of the recorded shape, {latency}"


def routes_table(rows: list[RouteComparison], speed: float) -> tuple[list[str], list[list[str]]]:
    header = ["route", "endpoint", "verdict", "calls rec / rep", "p50 rec / rep ms", "p99 rec / rep ms"]
    header += ["arrivals: KS p (gaps ±1 ms)", "behind (> 1 ms late)", "texts per call rec / rep", "errors"]
    table = []
    for r in rows:
        ks = "-" if r.arrivals_ks_p is None else f"{r.arrivals_ks_p:.3f}"
        texts = f"{r.texts_recorded} / {r.texts_replayed}" + (", identical per call" if r.texts_identical else "")
        table.append(
            [
                r.route,
                r.endpoint,
                "NOT FAITHFUL" if problems(r, speed) else "FAITHFUL",
                f"{r.calls_recorded} / {r.calls_replayed}",
                _pair(r.p50_recorded_ms, r.p50_replayed_ms),
                _pair(r.p99_recorded_ms, r.p99_replayed_ms),
                ks,
                str(r.behind),
                texts,
                str(r.errors),
            ]
        )
    return header, table


def render_trace(settings: ReplaySettings, rows: list[RouteComparison]) -> tuple[str, str]:
    """Markdown and HTML body: each route's verdict line first, then the table of every route."""
    speed = settings.speed
    title = f"Trace replay: {settings.trace} at ×{speed:g}, {settings.loops} loop(s)"
    lines = [f"{r.route} → {r.endpoint}: {verdict(r, speed)}" for r in rows]
    header, table = routes_table(rows, speed)
    note = (
        "Recorded latency is the meter's (upstream call time); replayed latency is scheduled (from the intended send "
        "time, so a late send counts against it). Texts per call: the replay sends each recorded call's count."
    )
    md = [f"## {title}", "", *(f"- **{line}**" for line in lines), "", md_table(header, table), "", note, ""]
    html = [f"<h2>{escape(title)}</h2>"]
    html += [f"<p class='{'bad' if 'NOT' in line else ''}'><b>{escape(line)}</b></p>" for line in lines]
    html += [html_table(header, table), f"<p>{escape(note)}</p>"]
    return "\n".join(md), "".join(html)


def write_trace_report(folder: Path, out_dir: Path | None = None) -> Path:
    """report.md and report.html of the replay summary in `folder`, written there (or in `out_dir`): named
    trace-report.* beside a results file, whose report they must not replace; returns the HTML file."""
    settings, rows = read_replay(folder / REPLAY_FILE)
    md, html = render_trace(settings, rows)
    folder = out_dir or folder
    folder.mkdir(parents=True, exist_ok=True)
    stem = "trace-report" if (folder / RESULTS_FILE).exists() else "report"
    for name, text in ((f"{stem}.md", mask(md)), (f"{stem}.html", html_page("ragbench trace replay report", html))):
        staged = folder / f".{name}.tmp"
        staged.write_text(text, encoding="utf-8")
        staged.replace(folder / name)
    return folder / f"{stem}.html"


def _pair(recorded: float, replayed: float | None) -> str:
    if replayed is None:
        return f"{recorded:.1f} / -"
    return f"{recorded:.1f} / {replayed:.1f} ({_change(recorded, replayed)})"


def _change(recorded: float, replayed: float) -> str:
    return f"{(replayed - recorded) / recorded:+.1%}" if recorded > 0 else "n/a"


def _speed(value: float | None) -> str:
    return "-" if value is None else f"×{value:.3g}"


def trace_size_answer(r: TraceSizeRecord) -> str:
    """The answer's first line: how much of the traffic fits, the replicas, the failure above it."""
    if r.max_speed is None:
        fits = "no probed speed of the traffic met the SLO" if r.failed_speed is not None else "no speed judged"
    elif r.max_speed < 1:
        fits = f"the traffic as recorded does not fit: {_speed(r.max_speed)} of it does"
    else:
        fits = f"the traffic {_speed(r.max_speed)} fits"
    replicas = "" if r.replicas is None else f"; {r.replicas} replica(s) for {_speed(r.target_speed)}"
    fails = "" if r.failed_speed is None else f"; fails at {_speed(r.failed_speed)}: {r.failed_because}"
    return f"{fits}{replicas}{fails}"


def probes_table(r: TraceSizeRecord) -> tuple[list[str], list[list[str]]]:
    header = ["speed", "verdict", f"p{r.slo_percentile:g} ms (SLO {r.slo_ms:g})", "offered / carried calls/s"]
    header += ["calls", "window s", "probe s", "loop lag p99 ms", "late sends", "machine", "why"]
    rows = []
    for p in r.probes:
        carried = "-" if p.carried_per_s is None else f"{p.carried_per_s:.3g}"
        rows.append(
            [
                _speed(p.speed),
                p.outcome.value,
                "-" if p.percentile_ms is None else f"{p.percentile_ms:.1f}",
                f"{p.offered_per_s:.3g} / {carried}",
                str(p.calls),
                f"{p.window_s:.1f}",
                f"{p.seconds:.1f}",
                "-" if p.loop_lag_p99_ms is None else f"{p.loop_lag_p99_ms:.1f}",
                str(p.late_sends),
                "-" if p.machine is None else p.machine.text(),
                p.reason,
            ]
        )
    return header, rows


def render_trace_size(results: Results, folder: Path) -> tuple[str, str]:
    """`size --trace`'s report: each answer first (best so far and the machine's share said), then every probe."""
    md, html = ["# ragbench size --trace", ""], ["<h1>ragbench size --trace</h1>"]
    for r in results.of("trace_size"):
        title = f"{r.trace}, p{r.slo_percentile:g} SLO {r.slo_ms:g} ms, errors ≤ {r.max_error_rate:g}"
        notes = [f"best so far ({r.stopped})" for _ in [0] if r.stopped]
        notes += [f"the search ended on the machine, not the endpoint: {r.too_busy}" for _ in [0] if r.too_busy]
        header, table = probes_table(r)
        md += [f"## {title}", "", f"**{trace_size_answer(r)}**", "", *(f"- {n}" for n in notes), ""]
        md += [md_table(header, table), "", TRACE_SIZE_NOTE, ""]
        html += [f"<h2>{escape(title)}</h2>", f"<p><b>{escape(trace_size_answer(r))}</b></p>"]
        html += [f"<p class='bad'>{escape(n)}</p>" for n in notes]
        html += [html_table(header, table), f"<p>{escape(TRACE_SIZE_NOTE)}</p>"]
    if not results.of("trace_size"):
        md.append("No answer was written (the run stopped before its search began).")
        html.append("<p>No answer was written (the run stopped before its search began).</p>")
    return "\n".join(md) + "\n", "".join(html)


TRACE_SIZE_NOTE = (
    "Each probe replays the trace at its speed (×1: as recorded). Scheduled latency (from each call's intended "
    "send). 'too busy': the client's event loop lag, or its sends left late, exceeded what the SLO tolerates "
    "(10% of it, at least 5 ms): the machine's share, neither a pass nor a failure. 'cut short': the budget or a "
    "signal ended the replay: no verdict. Replicas = ceil(target speed / highest pass)."
)
