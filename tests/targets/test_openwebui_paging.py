"""Open WebUI's paged listings (knowledge bases, a knowledge base's files) through httpx.MockTransport: every page
read once, and a server that ignores `page` ends the listing at the first page that adds nothing, said in one line."""

from __future__ import annotations

import httpx

from bench.core.http import HttpClient
from bench.targets.openwebui_knowledge import existing_files, knowledge_base

FILES = [{"id": f"f{i}", "meta": {"name": f"d{i}.txt"}, "hash": "h"} for i in range(7)]


class Listing:
    """The files route of one knowledge base, `size` items a page; `ignore_page`: every page is the first."""

    def __init__(self, size: int, ignore_page: bool = False, total: int = len(FILES)):
        self.size, self.ignore_page, self.total = size, ignore_page, total
        self.pages: list[int] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        page = int(request.url.params.get("page", "1"))
        self.pages.append(page)
        if len(self.pages) > 50:  # the unbounded loop this test stands guard against
            raise RuntimeError("listing never ended")
        start = 0 if self.ignore_page else (page - 1) * self.size
        if request.url.path == "/api/v1/knowledge/":
            items = [{"id": f["id"], "name": f"kb{f['id']}"} for f in FILES[start : start + self.size]]
        else:
            items = FILES[start : start + self.size]
        return httpx.Response(200, json={"items": items, "total": self.total})


def client(listing: Listing) -> HttpClient:
    return HttpClient("Open WebUI", "http://owui", transport=httpx.MockTransport(listing))


def test_every_page_is_read_once(capsys):
    listing = Listing(size=3)
    assert sorted(existing_files(client(listing), "kb")) == [f"d{i}.txt" for i in range(7)]
    assert listing.pages == [1, 2, 3] and capsys.readouterr().err == ""


def test_a_server_that_ignores_page_ends_the_listing_said_in_one_line(capsys):
    listing = Listing(size=3, ignore_page=True, total=70)  # a total past what it will ever list
    assert sorted(existing_files(client(listing), "kb")) == ["d0.txt", "d1.txt", "d2.txt"]
    assert listing.pages == [1, 2]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "answered page 2 with items of earlier pages" in err


def test_looking_for_a_knowledge_base_ends_on_a_repeated_page_and_creates_it(capsys):
    listing = Listing(size=2, ignore_page=True, total=70)
    made: list[str] = []

    def routes(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(200, json={"id": "new"})
        return listing(request)

    http = HttpClient("Open WebUI", "http://owui", transport=httpx.MockTransport(routes))
    assert knowledge_base(http, "wanted", made) == "new" and listing.pages == [1, 2] and len(made) == 1


def test_the_page_cap_bounds_a_server_that_never_runs_dry(capsys, monkeypatch):
    monkeypatch.setattr("bench.targets.openwebui_knowledge.MAX_PAGES", 3)

    def endless(request: httpx.Request) -> httpx.Response:
        page = int(request.url.params["page"])
        return httpx.Response(200, json={"items": [{"id": f"f{page}", "filename": f"d{page}"}], "total": 10**9})

    http = HttpClient("Open WebUI", "http://owui", transport=httpx.MockTransport(endless))
    assert len(existing_files(http, "kb")) == 3
    assert "still more items after 3 pages" in capsys.readouterr().err
