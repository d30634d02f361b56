"""Every kind of report opened in a real browser (headless Chromium): it renders, every plot decodes,
nothing is logged as an error, and the page asks the network for nothing."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from tests.report.browser import Chromium, PageVisit, chromium_path

# The fewest plots each report embeds: a report that lost its images must fail, not pass with nothing to decode.
PLOTS = {"quality": 2, "quality_b": 2, "identity": 1, "doctor": 0, "load": 2, "ceiling": 1}


@pytest.fixture(scope="module")
def browser():
    if chromium_path() is None:
        pytest.fail("chromium is not installed: `apt-get install -y chromium` (scripts/test.sh does)", pytrace=False)
    chromium = Chromium()
    yield chromium
    chromium.close()


def _pixels(png: bytes) -> np.ndarray:
    from matplotlib.image import imread

    return imread(io.BytesIO(png), format="png")[..., :3]


def _check(visit: PageVisit, page: Path, plots: int, title: str) -> None:
    assert visit.title == title
    assert visit.requests == [page.resolve().as_uri()], "the page itself is the only thing loaded"
    assert visit.console_errors == []
    assert len(visit.images) == page.read_text().count("<img") and len(visit.images) >= plots
    for image in visit.images:
        assert image["decoded"] and image["naturalWidth"] > 0 and image["naturalHeight"] > 0, image
    pixels = _pixels(visit.screenshot)
    ink = (pixels.min(axis=2) < 0.9).mean()  # share of pixels that are not (near) white
    assert pixels.std() > 0.05 and ink > 0.01, f"screenshot looks blank (ink {ink:.4f})"


@pytest.mark.parametrize("kind", sorted(PLOTS))
def test_report_renders_in_chromium(kind, command_outputs, browser):
    page = command_outputs.folders()[kind] / "report.html"
    visit = browser.visit(page)
    _check(visit, page, PLOTS[kind], f"ragbench {kind.removesuffix('_b')} report")


def test_the_checks_catch_a_broken_page(tmp_path, browser):
    """A page that fetches from the network, logs an error and embeds a broken image fails every check."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><html><head><title>broken</title>"
        '<link rel="stylesheet" href="http://127.0.0.1:9/style.css"></head><body><h1>x</h1>'
        '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==">'
        "<script>console.error('boom')</script></body></html>"
    )
    visit = browser.visit(page)
    assert "http://127.0.0.1:9/style.css" in visit.requests
    assert "boom" in visit.console_errors
    assert [i["decoded"] for i in visit.images] == [False] and visit.images[0]["naturalWidth"] == 0
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><head><title>blank</title></head><body></body></html>")
    with pytest.raises(AssertionError, match="blank"):
        _check(browser.visit(blank), blank, 0, "blank")
