"""What `compare` writes for people and CI systems: text, markdown, JSON, JUnit XML, and
pytest-benchmark JSON of the current run's latency and throughput (trend tools chart it over commits)."""

from __future__ import annotations

import json
import os
import platform
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.core.errors import InputError, UserError
from bench.gate.compare import FAIL, INFO, POWER, Check, Comparison, as_number, checked_points, figure_text, fmt_p
from bench.load.points import point_label
from bench.results.frame import now_iso
from bench.results.outdir import check_out_file
from bench.results.schema import LoadPointRecord, Loop
from bench.results.store import Results

if TYPE_CHECKING:  # imported where used: only --benchmark-json needs pytest-benchmark
    from pytest_benchmark.stats import Stats

_MARK = {"pass": "pass", "fail": "FAIL", "info": "info"}
_MD_MARK = {"pass": "✅ pass", "fail": "❌ **FAIL**", "info": "ℹ️ not gated"}
SUMMARY = "--summary"
_SUMMARY_HEAD = "## ragbench compare: "  # how render_markdown opens every summary: an earlier one is recognised


def inconclusive_line(comparison: Comparison) -> str:
    """`; 2 INCONCLUSIVE (...)`: gates that could neither show nor rule out a regression (a load interval
    straddling its limit, a quality drop significant only before the family's correction), and what they
    counted as."""
    unsure = [c for c in comparison.checks if c.inconclusive]
    policy = comparison.inconclusive_policy
    why = {
        "load": "the runner's noise is wider than the change gated",
        "quality": "a drop significant alone, not across the gated family",
    }
    reasons = "; ".join(why[kind] for kind in why if any(c.kind == kind for c in unsure))
    return f"; {len(unsure)} INCONCLUSIVE ({reasons}; counted as {policy}: --inconclusive {policy})" if unsure else ""


def verdict_line(comparison: Comparison) -> str:
    gated = [c for c in comparison.checks if c.status != INFO]
    skipped = len(comparison.checks) - len(gated)
    more = f"; {skipped} not gated, each says why" if skipped else ""
    more += inconclusive_line(comparison)
    if comparison.passed:
        return f"ragbench compare: pass ({len(gated)} checks, none regressed{more})"
    return f"ragbench compare: FAIL ({len(comparison.regressions)} of {len(gated)} checks regressed{more})"


def render_text(comparison: Comparison) -> str:
    lines = [verdict_line(comparison), f"baseline: {comparison.baseline}", f"current:  {comparison.current}"]
    lines += [f"!! {note}" for note in comparison.notes]
    lines += [
        f"{_MARK[c.status]:4}  {c.kind}: {(c.source + ' ') if c.source else ''}{c.summary}" for c in comparison.checks
    ]
    return "\n".join(lines) + "\n"


def render_markdown(comparison: Comparison) -> str:
    head = "✅ pass" if comparison.passed else f"❌ FAIL — {len(comparison.regressions)} regression(s)"
    head += inconclusive_line(comparison).replace(";", " ⚠️", 1)
    lines = [
        f"{_SUMMARY_HEAD}{head}",
        "",
        f"baseline `{comparison.baseline}` → current `{comparison.current}`",
        "",
    ]
    for note in comparison.notes:
        lines.append(f"> **⚠️ {_md_escape(note)}**")
        lines.append(">")
    if comparison.notes:
        lines[-1] = ""
    ordered = sorted(comparison.checks, key=lambda c: c.status != FAIL)  # regressions first
    for kind, header, cells in _MD_TABLES:
        rows = [c for c in ordered if c.kind == kind and c.figures]
        if rows:
            lines += [f"### {kind}", "", "| result | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
            lines += [f"| {_md_mark(c)} | " + " | ".join(_md_escape(x) for x in cells(c)) + " |" for c in rows]
            lines.append("")
    others = [c for c in ordered if not c.figures or c.kind not in {kind for kind, _, _ in _MD_TABLES}]
    if others:
        lines += ["| result | check | figures |", "|---|---|---|"]
        lines += [
            f"| {_MD_MARK[c.status]} | {c.kind}: {_md_escape(c.title.split(': ', 1)[1])} | {_md_escape(c.summary)} |"
            for c in others
        ]
        lines.append("")
    unsure = [c for c in comparison.checks if c.inconclusive]
    if unsure:  # an interval that straddles its limit is neither a pass nor a regression: said, never silent
        lines += [f"**Inconclusive ({len(unsure)} of {len(comparison.checks)} checks, {unsure[0].inconclusive}):**", ""]
        lines += [f"- ⚠️ {c.kind}: {_md_escape(c.summary)}" for c in unsure]
        lines.append("")
    skipped = [c for c in comparison.checks if c.status == INFO]
    if skipped:  # a check that gates nothing says so here, never as a silent pass
        lines += [f"**Not gated ({len(skipped)} of {len(comparison.checks)} checks):**", ""]
        lines += [
            f"- ℹ️ {c.kind}: {_md_escape(_where(c))} — {_md_escape(c.not_gated or 'reported only')}" for c in skipped
        ]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _md_mark(check: Check) -> str:
    return f"⚠️ inconclusive ({check.status})" if check.inconclusive else _MD_MARK[check.status]


def _where(check: Check) -> str:
    return f"{check.source}: {check.name}" if check.source else check.name


def _quality_cells(c: Check) -> list[str]:
    f = c.figures
    return [
        _where(c),
        f"{f['baseline']:.4f}",
        f"{f['current']:.4f}",
        f"{f['effect']:+.4f} [{f['ci_low']:+.4f}, {f['ci_high']:+.4f}]",
        f"{fmt_p(f['p'])} ({'not gated' if c.not_gated else fmt_p(f['p_holm'])})",
        str(f["n"]),
        _num(f["mde"], 4) + f" (α {f['mde_alpha']:.3g})",
        "–" if c.not_gated else str(f["max_drop"]),
    ]


def _num(value: float | None, digits: int = 1) -> str:
    """A figure of the markdown tables; a dash where a run has none."""
    return "–" if value is None else f"{value:.{digits}f}"


def _percent_change(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1%}"


def _load_cells(c: Check) -> list[str]:
    f = c.figures

    change = _percent_change(f["p99_change"])
    return [
        _where(c),
        f"{_num(f['baseline_texts_per_s'])} → {_num(f['current_texts_per_s'])}",
        _num(f["throughput_ratio"], 3),
        f"{_num(f['baseline_p99_ms'])} → {_num(f['current_p99_ms'])}",
        change,
        f"{f['baseline_errors']} → {f['current_errors']} ({f['baseline_error_rate']:.2%} → "
        f"{f['current_error_rate']:.2%})",
        "yes" if f["client_saturated"] else "no",
    ]


def _cost_cells(c: Check) -> list[str]:
    f = c.figures

    change = _percent_change(f["query_p99_change"])
    return [
        _where(c),
        f"{_num(f['baseline_ingest_texts_per_s'])} → {_num(f['current_ingest_texts_per_s'])}",
        _num(f["ingest_ratio"], 3),
        f"{_num(f['baseline_query_p99_ms'])} → {_num(f['current_query_p99_ms'])}",
        change,
        "; ".join(f["not_gated"]) or "–",
    ]


_MD_TABLES = [
    (
        "quality",
        [
            "target measure",
            "baseline",
            "current",
            "effect [95% CI, unadjusted]",
            "p (Holm over the gated)",
            "queries",
            f"detects a drop ≥ ({POWER:.0%} power)",
            "max drop",
        ],
        _quality_cells,
    ),
    (
        "cost",
        ["target", "ingest texts/s", "ratio", "query p99 ms", "p99 change", "not gated"],
        _cost_cells,
    ),
    ("load", ["point", "texts/s", "ratio", "p99 ms", "p99 change", "errors (rate)", "client saturated"], _load_cells),
]


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_json(comparison: Comparison) -> str:
    return (
        json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False, allow_nan=False, default=lambda v: None) + "\n"
    )


def junit_xml(comparison: Comparison) -> str:
    """One test case per check; the figures in a failure's message and in every case's output."""
    gated = [c for c in comparison.checks if c.status != INFO]
    suite = ET.Element(
        "testsuite",
        name="ragbench compare",
        tests=str(len(comparison.checks)),
        failures=str(len(comparison.regressions)),
        errors="0",
        skipped=str(len(comparison.checks) - len(gated)),
        timestamp=now_iso(),
    )
    unsure = inconclusive_line(comparison)
    if comparison.notes or unsure:
        props = ET.SubElement(suite, "properties")
        for note in comparison.notes:
            ET.SubElement(props, "property", name="note", value=note)
        if unsure:
            ET.SubElement(props, "property", name="inconclusive", value=unsure.removeprefix("; "))
    for c in comparison.checks:
        case = ET.SubElement(
            suite, "testcase", classname=f"ragbench.{c.kind}" + (f".{c.source}" if c.source else ""), name=c.name
        )
        if c.inconclusive:  # a case property even when it passed: CI's test view shows it beside the case
            ET.SubElement(ET.SubElement(case, "properties"), "property", name="inconclusive", value=c.inconclusive)
        if c.status == FAIL:
            kind = "inconclusive" if c.inconclusive else "regression"
            ET.SubElement(case, "failure", message=c.summary, type=kind).text = c.summary
        elif c.status == INFO:
            ET.SubElement(case, "skipped", message=f"not gated: {c.not_gated or 'reported only'}").text = c.summary
        ET.SubElement(case, "system-out").text = c.summary
    root = ET.Element("testsuites", name="ragbench", tests=suite.attrib["tests"], failures=suite.attrib["failures"])
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def benchmark_json(runs: list[tuple[str, Results]]) -> dict[str, Any]:
    """pytest-benchmark's JSON for the current run, figures computed by pytest-benchmark's own `Stats`:
    - per quality target, its per-query latency (a round is a query);
    - per load sweep point, its latency (a round is a request; values from the point's HDR histogram, to
      HDR's 0.1%: scheduled latency in the open loop, service latency otherwise) and its throughput (one
      round, the measured window, of as many iterations as texts: ops is texts per second)."""
    from pytest_benchmark import __version__ as pb_version

    entries = []
    for source, results in runs:
        prefix = f"{source}/" if source else ""
        entries += _quality_entries(results, prefix)
        entries += _ingest_entries(results, prefix)
        entries += _load_entries(results, prefix)
    return {
        "machine_info": _machine_info(),
        "commit_info": {},
        "benchmarks": entries,
        "datetime": now_iso("auto"),  # pytest-benchmark's precision
        "version": pb_version,
    }


def _quality_entries(results: Results, prefix: str) -> list[dict[str, Any]]:
    """Per quality target, its per-query latency (a round is a query)."""
    from pytest_benchmark.stats import Stats

    entries = []
    for target in results.targets:
        stats = Stats()
        for q in results.queries:
            if q.target == target.name and not q.error and q.latency_ms is not None:  # None: ranked in a batch
                if as_number(q.latency_ms) is None or q.latency_ms < 0:
                    raise InputError(
                        results.path,
                        f"query record {q.qid!r} of {q.target}: latency_ms is "
                        f"{figure_text(q.latency_ms)}, not a finite number >= 0",
                        results.line(q),
                    )
                stats.update(q.latency_ms / 1000)
        if stats:
            extra = {
                "unit": "seconds per query",
                "dataset": results.header.dataset.get("name"),
                "spec": target.spec,
                "errors": target.errors,
            }
            entries.append(
                _entry(f"{prefix}{target.name} query latency", f"quality/{prefix}{target.name}", stats, 1, extra)
            )
    return entries


def _ingest_entries(results: Results, prefix: str) -> list[dict[str, Any]]:
    """Per quality target with an `ingest` cost block, its ingest throughput: one round, the ingest's wall
    time, of as many iterations as texts sent to the endpoint (ops is texts per second, as for a load point)."""
    from pytest_benchmark.stats import Stats

    entries = []
    for target in results.targets:
        block = target.cost_blocks.get("ingest", {})
        sent = (block.get("texts") or 0) - (block.get("from_cache") or 0)
        seconds = as_number(block.get("wall_s"))
        if not isinstance(sent, int) or sent <= 0 or seconds is None or seconds <= 0:
            continue  # nothing sent (everything from the cache) or no wall time: no throughput measured
        window = Stats()
        window.update(seconds / sent)
        extra = {"unit": "seconds per text", "spec": target.spec, **{k: block.get(k) for k in INGEST_EXTRA}}
        group = f"quality/{prefix}{target.name}"
        entries.append(_entry(f"{prefix}{target.name} ingest throughput", group, window, sent, extra))
    return entries


INGEST_EXTRA = ("texts", "from_cache", "tokens", "texts_per_s", "tokens_per_s", "retries", "splits")


def _load_entries(results: Results, prefix: str) -> list[dict[str, Any]]:
    """Per load sweep point, its latency and its throughput (see benchmark_json)."""
    from pytest_benchmark.stats import Stats

    entries = []
    for point in checked_points(results).values():  # a figure it cannot read is an input error, never dropped
        label, group = point_label(point, point.endpoint), f"load/{prefix}{point.endpoint}"
        quantity = "scheduled" if point.loop == Loop.OPEN else "service"
        extra = {
            "loop": point.loop,
            "batch": point.batch,
            "concurrency": point.concurrency,
            "rate": point.rate,
            "client_saturated": point.client.saturated,
            **asdict(point.throughput),
        }
        latency = _histogram_stats(point.histograms.get(quantity), Stats, results, point)
        if latency:
            unit = {"unit": "seconds per request", "quantity": quantity}
            entries.append(_entry(f"{prefix}{label} latency", group, latency, 1, {**extra, **unit}))
        texts_per_s, seconds = as_number(point.throughput.texts_per_s), as_number(point.duration_s)
        if texts_per_s is None or seconds is None or texts_per_s <= 0 or seconds <= 0:
            continue  # no throughput measured: no throughput entry
        texts = round(texts_per_s * seconds)
        if texts:
            window = Stats()
            window.update(seconds / texts)
            entries.append(
                _entry(f"{prefix}{label} throughput", group, window, texts, {**extra, "unit": "seconds per text"})
            )
    return entries


def _histogram_stats(
    encoded: str | None, stats_class: type[Stats], results: Results, point: LoadPointRecord
) -> Stats | None:
    """A `Stats` holding every request of an HDR histogram (microseconds), in seconds."""
    if not encoded:
        return None
    from bench.load.histograms import decode, median_equivalent, recorded

    try:
        histogram = decode(encoded)
    except Exception:  # hdrh raises several kinds (base64, zlib, its own) on a damaged encoding
        raise InputError(
            results.path, "load_point record: a latency histogram cannot be decoded", results.line(point)
        ) from None
    stats = stats_class()
    for value, count in recorded(histogram):
        stats.data.extend([median_equivalent(histogram, value) / 1e6] * count)
    return stats if stats else None


def _entry(name: str, group: str, stats: Stats, iterations: int, extra: dict[str, Any]) -> dict[str, Any]:
    figures = stats.as_dict()
    figures["iterations"] = iterations
    return {
        "group": group,
        "name": name,
        "fullname": f"ragbench::{name}",
        "params": None,
        "param": None,
        "extra_info": extra,
        "options": {},
        "stats": figures,
    }


def _machine_info() -> dict[str, Any]:
    return {
        "node": platform.node(),
        "processor": platform.processor(),
        "machine": platform.machine(),
        "python_implementation": platform.python_implementation(),
        "python_version": platform.python_version(),
        "release": platform.release(),
        "system": platform.system(),
    }


def check_output_paths(
    outputs: dict[str, Path | None], reads: list[Path], writes: tuple[Path, ...] = (), overwrite: bool = False
) -> None:
    """Refuse, before anything is compared or written, an output (`outputs`: flag -> path) that is a file
    the command reads (`reads`), lies in a folder it writes results into (`writes`), or is another output:
    writing it would overwrite or corrupt that file (the summary is appended to); and one that is a file
    ragbench did not write, or one it did without `overwrite` (bench.results.outdir.check_out_file)."""
    given: dict[str, Path] = {}
    for flag, path in outputs.items():
        if path is None:
            continue
        for other_flag, other in given.items():
            if _same_file(path, other):
                raise UserError(f"{flag} {path}: also given as {other_flag}; give each output its own file")
        for source in reads:
            if _same_file(path, source):
                raise UserError(f"{flag} {path}: is an input of this run ({source}); writing it would destroy it")
        for folder in writes:
            if path.resolve().is_relative_to(folder.resolve()):
                raise UserError(f"{flag} {path}: is inside {folder}, which this run writes its results into")
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if flag == SUMMARY and step_summary and _same_file(path, Path(step_summary)):
            pass  # GitHub's own file for this step: appending to it is how a step adds to the page
        else:
            ours, unlike = _OWN[flag]
            check_out_file(path, flag, overwrite, ours, unlike, appended=flag == SUMMARY)
        given[flag] = path


def _is_junit(path: Path) -> bool:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return False
    return root.tag == "testsuites" and root.get("name") == "ragbench"


def _is_benchmark(path: Path) -> bool:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    entries = found.get("benchmarks") if isinstance(found, dict) else None
    return (
        isinstance(entries, list)
        and "machine_info" in found
        and all(isinstance(e, dict) and str(e.get("fullname", "")).startswith("ragbench::") for e in entries)
    )


def _is_summary(path: Path) -> bool:
    """Empty, or summaries compare appended, one after another."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return not text or text.startswith(_SUMMARY_HEAD)


_OWN = {  # flag -> how a file compare wrote there is recognised, and what a file that is not lacks
    "--junit": (_is_junit, 'no <testsuites name="ragbench"> root'),
    "--benchmark-json": (_is_benchmark, "not pytest-benchmark JSON of ragbench's entries"),
    SUMMARY: (_is_summary, f"neither empty nor opening with {_SUMMARY_HEAD.strip()!r}"),
}


def _same_file(a: Path, b: Path) -> bool:
    """The same file by path (links resolved), or by inode (a hard link)."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:  # an unreadable path is no proof of sameness; writing it fails with its own line
        return False


def write_outputs(
    comparison: Comparison,
    runs: list[tuple[str, Results]],
    junit: Path | None = None,
    summary: Path | None = None,
    benchmark: Path | None = None,
) -> None:
    """JUnit XML and benchmark JSON are written afresh; the markdown summary is appended (as
    $GITHUB_STEP_SUMMARY expects: several steps add to one page)."""
    if junit is not None:
        _write(junit, junit_xml(comparison))
    if benchmark is not None:
        _write(benchmark, json.dumps(benchmark_json(runs), indent=2) + "\n")
    if summary is not None:
        _write(summary, render_markdown(comparison) + "\n", mode="a")


def _write(path: Path, text: str, mode: str = "w") -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open(mode, encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UserError(f"{path}: cannot write ({exc.strerror or exc})") from None
