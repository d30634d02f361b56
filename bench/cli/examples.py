"""Two or three examples at the end of each command's `--help` (its epilog), by command path.

A command module that sets its own epilog keeps it; the others get theirs here when `ragbench X` resolves X
(bench/cli/app.py), so `ragbench --help` imports nothing more. docs/commands.md shows them too."""

from __future__ import annotations

from typing import Any

EXAMPLES: dict[str, tuple[str, ...]] = {
    "": (
        "ragbench demo --max-docs 200",
        "ragbench quality --dataset builtin:numpy-docs -t bm25 -t hybrid --out reports/q",
        "ragbench size -e tei=tei@http://127.0.0.1:8080 --slo p95=800ms",
    ),
    "ceiling": (
        "ragbench ceiling",
        "ragbench ceiling --device cuda --dtype float16 --batch 32,256 --lengths 128,512 --peak-tflops 989",
    ),
    "compare": (
        "ragbench compare reports/main reports/pr --max-drop nDCG@10=0.01 --junit junit.xml",
        "ragbench compare reports/main reports/pr --min-throughput-ratio 0.95 --max-p99-increase 10% --history ci/",
        "ragbench compare reports/ab  # an interleaved run (load --interleave), gated on its own paired rounds",
    ),
    "size": (
        "ragbench size -e tei=tei@http://127.0.0.1:8080 --slo p95=800ms --max-time 240s --out reports/size",
        "ragbench size -e tei=tei@http://127.0.0.1:8080 --slo p99=200ms --target-rps 500 --gpu-hourly-usd 3.5",
        "ragbench size -e tei=tei@http://127.0.0.1:8080 --trace trace.jsonl --route embedding=tei --slo p99=300ms"
        " --max-time 240s",
    ),
    "datasets check": (
        "ragbench datasets check builtin:numpy-docs",
        "ragbench datasets check ../shared/scifact --split test",
        "ragbench datasets check qa.jsonl --format jsonl",
    ),
    "demo": (
        "ragbench demo",
        "ragbench demo --max-docs 200 --out reports/demo-small --overwrite",
    ),
    "doctor": (
        "ragbench doctor --openwebui http://127.0.0.1:3000 --tei http://127.0.0.1:8080",
        "ragbench doctor --lightrag http://127.0.0.1:9621 --out reports/doctor",
    ),
    "evaluate": (
        "ragbench evaluate reports/demo/qrels.trec reports/demo/runs/hybrid.trec -c",
        "ragbench evaluate qrels.trec run.trec -m nDCG@10 -m MRR@10 -q --format json",
    ),
    "grow": (
        "ragbench grow --dataset builtin:numpy-docs -t bm25 -t dense --rungs 1k,3k,10k",
        "ragbench grow --dataset ../shared/scifact -t owui=openwebui@http://127.0.0.1:3000 --rungs 1k,10k,30k"
        " --slo p99=2s",
    ),
    "history": (
        "ragbench history 'ci-artifacts/*/results.jsonl' --min-throughput-ratio 0.95",
        "ragbench history ci-artifacts/ --by label:commit --max-drop nDCG@10=0.01 --out reports/history",
    ),
    "identity": (
        "ragbench identity -e ref=reference -e tei=tei@http://127.0.0.1:8080 --dataset builtin:numpy-docs",
        "ragbench identity -e a=tei@http://127.0.0.1:8080 -e b=tei@http://127.0.0.1:8081 --texts texts.txt"
        " --out reports/identity",
    ),
    "ingest": (
        "ragbench ingest --dataset builtin:numpy-docs -t openwebui@http://127.0.0.1:3000"
        " --setting RAG_EMBEDDING_BATCH_SIZE=1,8,32 --meter-upstream http://127.0.0.1:8080",
        "ragbench ingest --dataset ../shared/scifact -t lightrag@http://127.0.0.1:9621 --max-docs 200",
    ),
    "load": (
        "ragbench load -e tei=tei@http://127.0.0.1:8080 --batch 1,8,32 --concurrency 1,4,16 --out reports/load",
        "ragbench load -e tei=tei@http://127.0.0.1:8080 --rate 50,100,200 --arrival poisson --out reports/open",
        "ragbench load -e A=tei@http://127.0.0.1:8080 -e B=tei@http://127.0.0.1:8081 --interleave --max-time 120s"
        " --min-throughput-ratio 0.97 --out reports/ab",
    ),
    "meter": (
        "ragbench meter --port 9000 --upstream tei=http://127.0.0.1:8080",
        "ragbench meter --port 9000 --upstream tei=http://127.0.0.1:8080 --record trace.jsonl",
    ),
    "quality": (
        "ragbench quality --dataset builtin:numpy-docs -t bm25 -t dense -t hybrid --out reports/q",
        "ragbench quality --dataset ../shared/scifact -e emb=tei@http://127.0.0.1:8080"
        " -e rr=tei-rerank@http://127.0.0.1:8081 -t 'hybrid?embedder=emb' -t 'hybrid+rerank?embedder=emb&reranker=rr'",
        "ragbench quality --dataset ../shared/scifact -t owui=openwebui:hybrid@http://127.0.0.1:3000"
        " -t owui-rr=openwebui:rerank@http://127.0.0.1:3000",
    ),
    "report": (
        "ragbench report reports/demo",
        "ragbench report ci-artifacts/ --out reports/all --overwrite",
    ),
    "run": (
        "ragbench run suites/local.toml --out reports/local",
        "ragbench run suites/local.toml --baseline reports/local --out reports/local-new --junit junit.xml",
        "ragbench run suites/real-stack.toml --history ci-artifacts/ --summary summary.md",
    ),
}


def epilog(path: str) -> str | None:
    """The `Examples:` paragraph of a command path ("" for `ragbench` itself), one example per paragraph."""
    examples = EXAMPLES.get(path)
    if not examples:
        return None
    return "\n\n".join(["Examples:", *examples])


def add_examples(path: str, command: Any) -> None:
    """Give `command` (and a group's subcommands) its examples, unless its module wrote an epilog of its own."""
    if getattr(command, "epilog", None) is None:
        command.epilog = epilog(path)
    for name, sub in getattr(command, "commands", {}).items():
        add_examples(f"{path} {name}".strip(), sub)
