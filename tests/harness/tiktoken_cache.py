"""Write tiktoken's offline cache from the ranks shipped in the npm package js-tiktoken.

LightRAG exits at start when tiktoken cannot download o200k_base; there is no network here but the
package registries. js-tiktoken@1.0.21 carries the same BPE ranks (`dist/ranks/<enc>.cjs`, field
`bpe_ranks`: lines of `! <offset> <base64 token>...`). tiktoken reads `<base64> <rank>` lines from
`$TIKTOKEN_CACHE_DIR/<sha1 of the encoding's URL>` and checks their sha256 — so do we, before writing.

Usage: python tiktoken_cache.py JS_TIKTOKEN_PACKAGE_DIR CACHE_DIR
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

# encoding -> (public URL tiktoken downloads from, sha256 tiktoken expects of the file)
ENCODINGS = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}


def tiktoken_file(cjs_path: Path) -> bytes:
    text = cjs_path.read_text(encoding="utf-8")
    payload = json.loads(text[text.index("{") : text.rindex("}") + 1])
    ranks: list[tuple[int, str]] = []
    for line in payload["bpe_ranks"].split("\n"):
        if not line:
            continue
        _, offset, *tokens = line.split(" ")
        ranks.extend((int(offset) + i, token) for i, token in enumerate(tokens))
    ranks.sort()
    return "".join(f"{token} {rank}\n" for rank, token in ranks).encode("ascii")


def write_cache(package_dir: Path, cache_dir: Path) -> list[Path]:
    cache_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (url, sha256) in ENCODINGS.items():
        data = tiktoken_file(package_dir / "dist" / "ranks" / f"{name}.cjs")
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256:
            raise SystemExit(f"{name}: sha256 {actual} does not match tiktoken's {sha256}")
        target = cache_dir / hashlib.sha1(url.encode()).hexdigest()
        target.write_bytes(data)
        written.append(target)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    for path in write_cache(Path(sys.argv[1]), Path(sys.argv[2])):
        print(f"tiktoken cache: {path}")
