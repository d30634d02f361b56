"""MkDocs hooks (mkdocs.yml `hooks:`): the repository files a page links to outside docs/ (`../suites/local.toml`)
travel with the site under `repo/`, and the page's link is pointed there, so `mkdocs build --strict` checks those
links as it checks the others and a reader of the site can open the file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

# `](../PATH)` or `](../PATH#anchor)`: a markdown link from a page in docs/ to a file beside docs/.
_OUTSIDE = re.compile(r"\]\(\.\./(?!\.\.)([^)#\s]+)(#[^)\s]*)?\)")
_PREFIX = "repo"


def _repo(config: Any) -> Path:
    return Path(config["docs_dir"]).resolve().parent


def _linked(config: Any) -> set[str]:
    """The repository files (not pages: no .md) that some page links to as `../PATH`."""
    found = set()
    for page in Path(config["docs_dir"]).rglob("*.md"):
        for match in _OUTSIDE.finditer(page.read_text(encoding="utf-8")):
            path = match.group(1)
            if not path.endswith(".md") and (_repo(config) / path).is_file():
                found.add(path)
    return found


def on_files(files: Files, config: Any) -> Files:
    for path in sorted(_linked(config)):
        # File.generated with abs_src_path: copied from the repository as it is, at repo/PATH in the site
        files.append(File.generated(config, f"{_PREFIX}/{path}", abs_src_path=str(_repo(config) / path)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    depth = page.file.src_uri.count("/")  # pages below docs/ link one level further up
    up = "../" * depth

    def point(match: re.Match[str]) -> str:
        path, anchor = match.group(1), match.group(2) or ""
        if path.endswith(".md") or not (_repo(config) / path).is_file():
            return match.group(0)  # left as written: strict mode reports it
        return f"]({up}{_PREFIX}/{path}{anchor})"

    return _OUTSIDE.sub(point, markdown)
