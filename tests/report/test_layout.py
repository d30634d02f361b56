"""Every kind of report leads with its answer and shows nothing blank or empty: no `None` in its text, every plot a
real picture (the batch x concurrency heatmap present and filled with `--lengths`), the answer's section before the
evidence, and each page rendered by headless Chromium into a screenshot that is not blank.

Made from real command runs where they are quick (quality under `--background` against the loopback fault server,
`load --lengths --repeat` against the scripted TEI-shaped server) and from the stored results files of
tests/results/v2 for the rest (a size run needs minutes); the ingest report from hand-made records."""

from __future__ import annotations

import base64
import io
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.report import write_report
from bench.results.store import read_results
from tests.harness.process import free_port, start_process, stop_process, wait_healthy
from tests.paths import REPO
from tests.quality.underload_fixture import UnderloadServer, ndcg_at_10, write_long_queries
from tests.report.browser import Chromium, chromium_path
from tests.report.conftest import LOAD_SERVER, ragbench_exit
from tests.report.ingest_fixture import write_ingest_report

STORED = REPO / "tests" / "results" / "v2"
SHOTS = Path("/tmp/reports-shots")  # kept after the run, to look at
_IMAGE = re.compile(r'<img alt="([^"]*)" src="data:image/png;base64,([^"]+)"')


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    """Report kind -> its report.html."""
    root = tmp_path_factory.mktemp("layout")
    pages = {}
    for kind in ("quality", "size", "identity", "doctor"):
        (root / kind).mkdir()
        shutil.copy(STORED / f"{kind}.jsonl", root / kind / "results.jsonl")
        pages[kind] = write_report(root / kind / "results.jsonl")
    (root / "ingest").mkdir()
    pages["ingest"] = write_ingest_report(root / "ingest")
    server = UnderloadServer(max_inflight=3, service_ms=40).start()
    try:
        background = "emb@rate=100&batch=1&duration=1s&warmup=0.2s"
        targets = ["dense?embedder=emb", "bm25"]
        ndcg_at_10(write_long_queries(root), root / "under_load", targets, f"emb=tei@{server.url}", background)
    finally:
        server.shutdown()
    pages["quality_under_load"] = root / "under_load" / "report.html"
    texts = root / "texts.jsonl"
    texts.write_text("".join(f'"{" ".join(["word"] * 40)} {i}"\n' for i in range(12)))
    port = free_port()
    server_process = start_process(
        "load-fixture",
        [sys.executable, str(LOAD_SERVER), "--port", str(port), "--service-ms", "2"],
        root / "load-fixture.log",
    )
    try:
        wait_healthy(server_process, f"http://127.0.0.1:{port}/metrics", deadline_s=30)
        args = ["-e", f"t=tei@http://127.0.0.1:{port}", "--batch", "1,2", "--concurrency", "1,2", "--lengths", "8,16"]
        args += ["--repeat", "2", "--duration", "0.3s", "--warmup", "0s", "--texts", str(texts)]
        assert ragbench_exit("load", *args, "--out", str(root / "load")) == 0
    finally:
        stop_process(server_process)
    pages["load"] = root / "load" / "report.html"
    return pages


def _text(page: Path) -> str:
    """The page without its embedded pictures."""
    return _IMAGE.sub("<img>", page.read_text())


def _pixels(png: bytes) -> np.ndarray:
    from matplotlib.image import imread

    return imread(io.BytesIO(png), format="png")[..., :3]


def _ink(pixels: np.ndarray) -> float:
    """Share of pixels that are not (near) white."""
    return float((pixels.min(axis=2) < 0.9).mean())


KINDS = ("quality", "quality_under_load", "load", "size", "identity", "doctor", "ingest")


@pytest.mark.parametrize("kind", KINDS)
def test_no_none_and_no_blank_plot(kind, reports):
    page = reports[kind]
    assert "None" not in _text(page), re.findall(r".{60}None.{20}", _text(page))
    assert "None" not in (page.parent / "report.md").read_text()
    for alt, data in _IMAGE.findall(page.read_text()):
        pixels = _pixels(base64.b64decode(data))
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100, alt
        assert _ink(pixels) > 0.02 and pixels.std() > 0.05, f"{alt}: blank"


def test_the_heatmap_is_drawn_per_length(reports):
    """`--lengths` made every closed point carry a length; the heatmap left them out and was empty."""
    for kind in ("load", "size"):
        images = dict(_IMAGE.findall(reports[kind].read_text()))
        heatmap = _pixels(base64.b64decode(images["Texts/s over batch x concurrency"]))
        # Filled cells cover most of each panel; an empty (all-NaN) panel is white but for its axes and colorbar.
        assert _ink(heatmap) > 0.3, f"{kind}: heatmap blank (ink {_ink(heatmap):.2f})"


def test_each_report_leads_with_its_answer(reports):
    def order(kind: str, *marks: str) -> None:
        text = _text(reports[kind])
        found = [text.find(m) for m in marks]
        assert -1 not in found and found == sorted(found), dict(zip(marks, found))

    order("quality", "<h2>Results</h2>", "<h2>Paired significance</h2>", "<img", "<h2>Cost and anomalies</h2>")
    order(
        "quality_under_load",
        "<h2>Results</h2>",
        "<h2>Quality under background load: dense?embedder=emb</h2>",
        "<h2>Paired significance</h2>",
        "<h2>What each quality point costs</h2>",
        "<h2>Queries that changed under load: dense?embedder=emb</h2>",  # evidence, at the end
    )
    order("size", "<h2>Answer: ", "saturation rate", "client batch / concurrency", "<h2>Evidence", "<h3>Points</h3>")
    order("doctor", "problem(s) found", "<table>")
    order("ingest", "<h2>Answer</h2>", "recommended <code>", "<h2>Combinations: ", "<table>", "<img")


def test_under_load_only_meaningful_pairs_are_tested(reports):
    results = read_results(reports["quality_under_load"].parent / "results.jsonl")
    pairs = {frozenset((c.a, c.b)) for c in results.comparisons}
    dense, bm25 = "dense?embedder=emb", "bm25"
    # bm25 matches one document of this corpus: nDCG@10 over 1 document and over dense's full ranking are not
    # tested against each other (rankings of different lengths below the cut-off), and the report says so.
    assert pairs == {
        frozenset((f"{dense}@bg0", f"{dense}@bg100")),
        frozenset((f"{bm25}@bg0", f"{bm25}@bg100")),
    }
    report = (reports["quality_under_load"].parent / "report.md").read_text()
    assert f"nDCG@10 not tested between `{dense}@bg0` (nDCG@10 over its full ranking) and `{bm25}@bg0`" in report


def test_repeat_intervals_are_in_the_html_table(reports):
    """`load --repeat N`: the stdout table's `(mean M [LOW, HIGH], N repeats)` is in the report's table too."""
    cells = re.findall(r"<td>([0-9.]+ \(mean [0-9.]+ \[[0-9.]+, [0-9.]+\], 2 repeats\))</td>", _text(reports["load"]))
    assert len(cells) == len(read_results(reports["load"].parent / "results.jsonl").load_points) == 8


def test_every_report_renders_in_chromium(reports):
    """Each page in headless Chromium: its screenshot (kept in /tmp/reports-shots to look at) is not blank."""
    if chromium_path() is None:
        pytest.fail("chromium is not installed: `apt-get install -y chromium` (scripts/test.sh does)", pytrace=False)
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser = Chromium()
    try:
        for kind in KINDS:
            visit = browser.visit(reports[kind])
            (SHOTS / f"{kind}.png").write_bytes(visit.screenshot)
            assert visit.console_errors == [], kind
            assert all(i["decoded"] and i["naturalWidth"] > 0 for i in visit.images), kind
            pixels = _pixels(visit.screenshot)
            assert pixels.std() > 0.05 and _ink(pixels) > 0.01, f"{kind}: screenshot blank"
    finally:
        browser.close()


def test_a_failed_point_is_a_gap_not_a_zero(tmp_path, monkeypatch):
    """A failed point (nothing succeeded: texts/s 0) is drawn as a gap in the throughput line and the heatmap."""
    import json

    from bench.report import load_plots as load

    lines = [json.loads(line) for line in (STORED / "size.jsonl").read_text().splitlines()]
    failed = next(r for r in lines if r.get("loop") == "closed")
    failed.update(status="failed", problem="nothing succeeded")
    failed["throughput"]["texts_per_s"] = 0.0
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    points = read_results(tmp_path / "results.jsonl").load_points
    drawn = []
    monkeypatch.setattr(load, "_save", lambda fig, path: drawn.append(fig) or path)
    load.throughput_plot(points, tmp_path / "t.png")
    load.heatmap_plot(points, tmp_path / "h.png")
    line, image = drawn[0].axes[0].lines[0], drawn[1].axes[0].images[0]
    assert np.isnan(line.get_ydata()[0]) and not np.isnan(line.get_ydata()[1])
    assert np.ma.getmaskarray(image.get_array())[0, 0] and "failed" in [t.get_text() for t in drawn[1].axes[0].texts]
