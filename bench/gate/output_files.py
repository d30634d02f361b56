"""The files `compare` writes (`--junit`, `--summary`, `--benchmark-json`): each checked before anything is
compared, so a run's inputs or a file ragbench did not write are never overwritten; then written."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from bench.core.errors import UserError
from bench.gate.benchmark_json import benchmark_json
from bench.gate.checks import Comparison
from bench.gate.inputs import same_file
from bench.gate.junit import junit_xml
from bench.gate.markdown import SUMMARY_HEAD, render_markdown
from bench.gate.options import step_summary
from bench.results.outdir import check_out_file
from bench.results.store import Results

SUMMARY = "--summary"


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
            if same_file(path, other):
                raise UserError(f"{flag} {path}: also given as {other_flag}; give each output its own file")
        for source in reads:
            if same_file(path, source):
                raise UserError(f"{flag} {path}: is an input of this run ({source}); writing it would destroy it")
        for folder in writes:
            if path.resolve().is_relative_to(folder.resolve()):
                raise UserError(f"{flag} {path}: is inside {folder}, which this run writes its results into")
        github = step_summary()
        if flag == SUMMARY and github is not None and same_file(path, github):
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
    return not text or text.startswith(SUMMARY_HEAD)


_OWN = {  # flag -> how a file compare wrote there is recognised, and what a file that is not lacks
    "--junit": (_is_junit, 'no <testsuites name="ragbench"> root'),
    "--benchmark-json": (_is_benchmark, "not pytest-benchmark JSON of ragbench's entries"),
    SUMMARY: (_is_summary, f"neither empty nor opening with {SUMMARY_HEAD.strip()!r}"),
}


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
