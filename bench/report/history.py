"""The history's outputs: a markdown summary for a CI step, JSON for tools, and one small-multiples page per job."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from bench.core.errors import UserError
from bench.history.analysis import HistoryReport, SeriesReport
from bench.history.changepoints import SCORE_RESOLUTION, ChangePoint
from bench.history.newest import MIN_REFERENCE, OutOfLine, bound_text
from bench.history.series import Scale, Series

COLUMNS = 4  # panels per row of a job's page
NAME_CHARS = 12
DPI = 80  # a run's name on a plot (a commit's first characters)
BOTTOM_INCHES = 0.3  # below the bottom row: its tick labels
MARKDOWN_FILE, JSON_FILE, PLOT_PATTERN = "history.md", "history.json", "history_*.png"
PLOT_SOFTWARE = "ragbench history"  # a PNG's Software text: how a page ragbench wrote is told from a user's


def size_text(series: Series, change: ChangePoint) -> str:
    """`×0.903 [0.871, 0.936]` for ratios, `-0.0210 [-0.0260, -0.0160]` for differences."""
    if series.scale == Scale.RATIO:
        return f"×{change.size:.3f} [{change.low:.3f}, {change.high:.3f}]"
    return f"{change.size:+.4f} [{change.low:+.4f}, {change.high:+.4f}]"


def _p(p: float) -> str:
    return f"{p:.4f}" if p >= 1e-4 else f"{p:.1e}"


def _g(value: float) -> str:
    return f"{value:.4g}"


def render_markdown(report: HistoryReport) -> str:
    runs = report.history.runs
    lines = [
        "## History: change points",
        "",
        f"{len(runs)} runs ({runs[0].name} … {runs[-1].name}), {len(report.series)} series; detector: a split "
        f"tested at α={report.settings.alpha:g} per split (the false-alarm rate of a series without a change), "
        f"seed {report.settings.seed}; per-query score differences under {SCORE_RESOLUTION:g} (the scores' "
        "resolution: rounding) are no change.",
        "",
    ]
    lines += [*(f"- {note}" for note in report.history.notes), *([""] if report.history.notes else [])]
    failed = report.failed
    verdict = (
        "**FAIL**: the newest run starts a change point, or is out of line, past a limit" if failed else "**PASS**"
    )
    undecided = [s for s in report.series if s.undecided]
    if undecided:
        verdict += f" ({len(undecided)} series INCONCLUSIVE, counted as pass: each says why)"
    lines += [verdict, ""]
    lines += [*(f"- {s.series.name}: {'; '.join(s.breaches)}" for s in failed), *([""] if failed else [])]
    lines += [*(f"- {s.series.name}: {s.undecided}" for s in undecided), *([""] if undecided else [])]
    changes = report.changes()
    lines += [f"### Change points ({len(changes)}), the largest first", ""]
    if changes:
        lines += [
            "| series | at run | size [95% interval] | p | before → after | test |",
            "|---|---|---|---|---|---|",
        ]
        for s, c in changes:
            run = runs[c.run]
            lines.append(
                f"| {s.series.name} | {run.name} | {size_text(s.series, c)} | {_p(c.p_value)} "
                f"| {_g(c.before)} → {_g(c.after)} | {c.test} |"
            )
    else:
        lines.append("No change point in any series.")
    lines += ["", "### The newest run in its segment", "", *_newest_lines(report), ""]
    return "\n".join(lines)


def _newest_lines(report: HistoryReport) -> list[str]:
    runs = report.history.runs
    lines: list[str] = []
    steady = untested = 0
    for s in report.series:
        found, limit = s.out_of_line, report.limits.ratio_limit(s.series)
        if found is not None and (found.past_bound or limit is not None):
            said = "past the bound" if found.past_bound else "within the bound"
            lines.append(f"- {s.series.name}: {bound_text(found)}: {said}" + _limit_text(found, limit))
        elif found is None and s.series.scale == Scale.RATIO and report.limits.gates(s.series):
            untested += 1
        if not s.changes:
            steady += 1
            continue
        since = runs[s.changes[-1].run]
        lines.append(f"- {s.series.name}: run {s.segment_runs} of its segment, since the change at run {since.name}")
    if steady:
        lines.append(f"- {steady} series without a change point: every run is in one segment")
    if untested:
        lines.append(
            f"- {untested} gated series whose newest run was not tested against the runs before it: fewer than "
            f"{MIN_REFERENCE} runs since their last change point, or the newest run did not measure them"
        )
    return lines


def _limit_text(found: OutOfLine, limit: float | None) -> str:
    """`; limit ×0.95 (333.9): past it`: the limit as a figure beside the bound (a run fails past both)."""
    if limit is None:
        return "; no limit: not gated"
    past = found.size < limit if found.bound < found.centre else found.size > limit
    return f"; limit ×{limit:g} ({found.centre * limit:.4g}): {'past it' if past else 'within it'}"


def render_json(report: HistoryReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"


def _panel(ax: Axes, s: SeriesReport, report: HistoryReport) -> None:
    series = s.series
    x = [o.run for o in series.observations]
    ax.plot(x, series.values, ".", color="tab:blue", markersize=3)
    bars = [(o.run, o.value, o.low, o.high) for o in series.observations if o.low is not None and o.high is not None]
    if bars:
        xs, ys, lows, highs = zip(*bars)
        ax.errorbar(
            xs,
            ys,
            yerr=[[y - lo for y, lo in zip(ys, lows)], [hi - y for y, hi in zip(ys, highs)]],
            fmt="none",
            ecolor="tab:blue",
            alpha=0.35,
            linewidth=0.8,
        )
    bounds = [0, *(c.position for c in s.changes), len(series.observations)]
    for start, end in itertools.pairwise(bounds):
        segment = series.values[start:end]
        ax.hlines(sum(segment) / len(segment), x[start], x[end - 1], colors="tab:orange", linewidth=1.2)
    for c in s.changes:
        color = "tab:red" if c is s.newest_change else "grey"
        ax.axvline(c.run - 0.5, color=color, linestyle="--", linewidth=0.9)
        name = report.history.runs[c.run].name[:NAME_CHARS]
        ax.annotate(
            name,
            (c.run - 0.5, 1),
            xycoords=("data", "axes fraction"),
            fontsize=6,
            rotation=90,
            va="top",
            ha="right",
            color=color,
        )
    ax.set_title(f"{series.configuration}\n{series.figure}", fontsize=6)
    ax.tick_params(labelsize=5)
    # the x axis is the runs' places in the history; its ticks say the runs' names (their `run=`, commit or
    # ordering label), at whole places only
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda at, _: _run_name(report, at)))
    ax.locator_params(axis="y", nbins=4)


def _run_name(report: HistoryReport, at: float) -> str:
    """The name of the run at place `at` of the history, '' between places or past either end."""
    runs = report.history.runs
    index = round(at)
    return runs[index].name[:NAME_CHARS] if abs(at - index) < 1e-9 and 0 <= index < len(runs) else ""


def job_figure(report: HistoryReport, job: str) -> Figure:
    """One job's page: every series over the runs, intervals where measured, segments' means, change points."""
    panels = [s for s in report.series if s.series.job == job]
    rows = -(-len(panels) // COLUMNS)
    height = 2.0 * rows + 0.6
    fig, axes = plt.subplots(rows, COLUMNS, figsize=(3.6 * COLUMNS, height), squeeze=False)
    for ax, s in zip(axes.flat, panels):
        _panel(ax, s, report)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(f"{job}: each figure over runs (orange: segment means; dashed: change points)", fontsize=9)
    # fixed margins in inches, not tight_layout (laying out dozens of panels that way takes most of a history's
    # time): the bottom row's run numbers need BOTTOM_INCHES whatever the page's height
    fig.subplots_adjust(
        left=0.05, right=0.98, bottom=BOTTOM_INCHES / height, top=1 - 0.6 / height, hspace=0.6, wspace=0.3
    )
    return fig


def plot_job(report: HistoryReport, job: str, path: Path) -> Path:
    fig = job_figure(report, job)
    fig.savefig(path, dpi=DPI, metadata={"Software": PLOT_SOFTWARE})
    plt.close(fig)
    return path


def _ours(path: Path) -> bool:
    """Whether ragbench's history wrote this file (only those are replaced)."""
    try:
        if path.name == MARKDOWN_FILE:
            return path.read_text(encoding="utf-8").startswith("## History: change points")
        if path.name == JSON_FILE:
            document = json.loads(path.read_text(encoding="utf-8"))
            return isinstance(document, dict) and {"verdict", "detector", "series"} <= document.keys()
        with path.open("rb") as png:
            return PLOT_SOFTWARE.encode() in png.read(4096)
    except (OSError, UnicodeDecodeError, ValueError):
        return False


def check_outputs(folder: Path, overwrite: bool) -> list[Path]:
    """Refuse (one line, exit 2) a `--out` that cannot take the history's files without losing a user's; return
    ragbench's own history files there, which the new ones replace. Touches nothing."""
    for path in (folder, *folder.parents):
        if path.exists() and not path.is_dir():
            raise UserError(f"--out {folder}: {path} is a file, not a folder (history writes {MARKDOWN_FILE} there)")
    if not folder.is_dir():
        return []
    found = [p for p in (folder / MARKDOWN_FILE, folder / JSON_FILE) if p.exists() or p.is_symlink()]
    found += sorted(folder.glob(PLOT_PATTERN))
    for path in found:
        if path.is_dir() or path.is_symlink():
            raise UserError(f"--out {folder}: {path.name} is a folder or a link where history writes a file")
        if not overwrite:
            raise UserError(f"--out {folder}: holds {path.name}; give --overwrite to replace it, or another --out")
        if not _ours(path):
            raise UserError(
                f"--out {folder}: {path.name} is not a file ragbench wrote; --overwrite replaces only ragbench's "
                "own files: give another --out"
            )
    return found


def write_outputs(report: HistoryReport, folder: Path, replaced: list[Path]) -> list[Path]:
    """history.md, history.json and history_<job>.png in `folder`, once ragbench's earlier ones (`replaced`, from
    check_outputs) are gone; the paths written."""
    try:
        for path in replaced:
            path.unlink()
        folder.mkdir(parents=True, exist_ok=True)
        written = [folder / MARKDOWN_FILE, folder / JSON_FILE]
        written[0].write_text(render_markdown(report), encoding="utf-8")
        written[1].write_text(render_json(report), encoding="utf-8")
        for job in report.history.jobs():
            written.append(plot_job(report, job, folder / f"history_{job}.png"))
    except OSError as exc:
        raise UserError(f"--out {folder}: {exc.strerror or exc}: {exc.filename or folder}") from None
    return written
