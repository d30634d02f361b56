"""The four comparisons of docs/peers.md, each run against its own loopback servers and turned into a table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict

from benchmarks import peers_run as run
from benchmarks.peers_servers import nginx, python_server
from benchmarks.peers_table import Row, figure, markdown_table, signed_share
from benchmarks.peers_truth import QueueCase, case_truth, relative_error, stall_percentile_ms

USERS = 64
SHAPES = {  # path, body, ragbench's endpoint spec (of a base URL)
    "TEI": ("/embed", '{"inputs":["hello world"]}', "n=tei@{url}"),
    "OpenAI": ("/v1/embeddings", '{"input":["hello world"],"model":"peers"}', "n=openai@{url}/v1?model=peers"),
}
STALL = {"stall_ms": 200.0, "period_ms": 1000.0, "service_ms": 2.0, "rate": 200.0}
HIDES_SHARE = 0.5  # a p99 under half the truth has lost the stall's waits (coordinated omission)

Tool = Callable[[str, float], run.Run]


def ceiling_tools(shape: str) -> list[tuple[str, Tool]]:
    path, body, spec = SHAPES[shape]
    closed = ["--concurrency", str(USERS)]
    tools: list[tuple[str, Tool]] = [
        ("wrk -t1 -c64", lambda url, s: run.wrk(url, path, body, s, USERS)),
        ("ragbench, 1 worker", lambda url, s: run.ragbench_load(spec.format(url=url), closed, s)),
        ("ragbench, 2 workers", lambda url, s: run.ragbench_load(spec.format(url=url), [*closed, "--workers", "2"], s)),
        ("Locust FastHttpUser, 1 process", lambda url, s: run.locust(url, path, body, s, USERS)),
    ]
    if shape == "OpenAI":
        tools.insert(3, ("AIPerf", lambda url, s: run.aiperf(url, ["--concurrency", str(USERS)], s)))
        tools.insert(4, ("GuideLLM", lambda url, s: run.guidellm(url, f"kind=concurrent,streams={USERS}", s)))
    return tools


def ceiling_section(seconds: float, rounds: int) -> tuple[str, list[dict]]:
    """Every tool on nginx, closed loop at 64 in flight; each round alternates the order."""
    rows, raw = [], []
    with nginx() as url:
        for index in range(rounds):
            for shape in SHAPES:
                tools = ceiling_tools(shape)
                runs = [(name, tool(url, seconds)) for name, tool in (tools if index % 2 == 0 else tools[::-1])]
                limit = next((r.result.requests_per_s for n, r in runs if n.startswith("wrk") and r.result), None)
                for name, done in runs:
                    rate = done.result.requests_per_s if done.result else None
                    share = f"{rate / limit:.1%}" if rate and limit else "—"
                    note = done.failure or ("" if done.result and not done.result.errors else "errors")
                    cells = (str(index + 1), shape, name, figure(rate), share, note or "ok")
                    rows.append(Row(cells, done.load, done.command))
                    raw.append({"round": index + 1, "shape": shape, "tool": name, **_raw(done)})
    header = ("round", "shape", "tool", "requests/s", "of wrk", "outcome")
    title = f"### 1. Client ceiling: nginx on loopback, closed loop, {USERS} in flight, {seconds:g} s a tool"
    return title + "\n\n" + markdown_table(header, rows), raw


def stall_tools(truth_rate: float) -> list[tuple[str, str, Tool]]:
    path, body, spec = SHAPES["OpenAI"]
    rate = f"{truth_rate:g}"
    return [
        ("ragbench", "open loop", lambda url, s: run.ragbench_load(spec.format(url=url), ["--rate", rate], s)),
        ("AIPerf", "--request-rate", lambda url, s: run.aiperf(url, ["--request-rate", rate], s)),
        ("GuideLLM", "constant", lambda url, s: run.guidellm(url, f"kind=constant,rate={rate}", s)),
        ("Locust", f"{rate} users x 1/s", lambda url, s: run.locust(url, path, body, s, int(truth_rate), 1.0)),
        ("wrk -t1 -c64", "closed loop", lambda url, s: run.wrk(url, path, body, s, USERS)),
    ]


def stall_section(seconds: float) -> tuple[str, list[dict]]:
    """Each tool at 200 requests/s on the stall server; p99 against the truth from the intended send."""
    truth = stall_percentile_ms(STALL["stall_ms"], STALL["period_ms"], STALL["service_ms"], 99.0)
    args = ["--service-ms", "2", "--stall-ms", "200", "--period-ms", "1000"]
    rows, raw = [], []
    with python_server("tests/load/fixture_server.py", args, run.ROOT / "reports/peers/stall.log") as url:
        for name, mode, tool in stall_tools(STALL["rate"]):
            done = tool(url, seconds)
            p99 = done.result.p99_ms if done.result else None
            error = relative_error(p99, truth)
            hides = "—" if p99 is None else ("hides it" if p99 < HIDES_SHARE * truth else "shows it")
            rate = done.result.requests_per_s if done.result else None
            second = figure(done.result.scheduled_p99_ms, 1) if done.result else "—"
            cells = (name, mode, figure(rate), figure(p99, 1), signed_share(error), hides, second, done.failure or "ok")
            rows.append(Row(cells, done.load, done.command))
            raw.append({"tool": name, "mode": mode, "truth_p99_ms": truth, **_raw(done)})
    header = (
        "tool",
        "how it sends",
        "requests/s",
        "p99 ms",
        "vs truth",
        "the stall",
        "its p99 from the intended send",
        "outcome",
    )
    title = (
        f"### 2. Latency under a stall: {STALL['stall_ms']:g} ms of every {STALL['period_ms']:g} ms, "
        f"{STALL['service_ms']:g} ms otherwise, {STALL['rate']:g} requests/s; truth p99 {truth:g} ms"
    )
    return title + "\n\n" + markdown_table(header, rows), raw


def parse_cases(text: str) -> list[QueueCase]:
    """`MS:CV:SLOTS:PERCENTILE:SLO_MS,...` (e.g. `50:0:1:95:250`)."""
    cases = []
    for item in text.split(","):
        ms, cv, slots, pct, slo = item.split(":")
        cases.append(QueueCase(float(ms), float(cv), int(slots), float(pct), float(slo)))
    return cases


def size_section(cases_text: str, budget_s: float) -> tuple[str, list[dict]]:
    """Per case: the truth, `ragbench size`, AIPerf's and GuideLLM's sweeps, each bounded by `budget_s`."""
    rows, raw = [], []
    for case in parse_cases(cases_text):
        truth = case_truth(case)
        args = ["--service-ms", f"{case.service_ms:g}", "--service-cv", f"{case.cv:g}", "--slots", str(case.slots)]
        with python_server("tests/sizing/queue_server.py", args, run.ROOT / "reports/peers/queue.log") as url:
            for name, answer in run.size_answers(url, case, budget_s):
                error = relative_error(answer.rate, truth)
                cells = (case.label, f"{truth:.2f}", name, figure(answer.rate, 2), signed_share(error))
                cells += (f"{answer.run.wall_s:.0f} s", answer.run.failure or answer.note or "ok")
                rows.append(Row(cells, answer.run.load, answer.run.command))
                raw.append({"case": case.label, "truth": truth, "tool": name, "rate": answer.rate, **_raw(answer.run)})
    header = ("server, SLO", "truth /s", "tool", "answer /s", "vs truth", "took", "outcome")
    title = f"### 3. Saturation under an SLO: queue servers of known truth, each tool bounded by {budget_s:g} s"
    return title + "\n\n" + markdown_table(header, rows), raw


def features_section(raw: dict[str, list[dict]]) -> str:
    """What each tool's own output held, from the OpenAI-shape ceiling runs (texts/s, tokens/s, server timing,
    errors by class) and the stall runs (the exit status a CI job would see)."""
    rows = []
    ceiling = [r for r in raw.get("ceiling", []) if r["shape"] == "OpenAI" and r.get("result")]
    for entry in ceiling:
        result = entry["result"]
        cells = (
            entry["tool"],
            figure(result.get("texts_per_s")),
            figure(result.get("tokens_per_s")),
            "yes" if result.get("server_timing") else "no",
            ", ".join(f"{k}: {v}" for k, v in result.get("errors_by_class", {}).items()) or "none seen",
            str(entry.get("exit")),
        )
        rows.append(Row(cells, entry["load"], entry["command"]))
    header = ("tool", "texts/s", "tokens/s", "server-side timing", "errors by class", "exit status")
    return "### 4. What each reported for an embedding endpoint (OpenAI shape, the ceiling runs)\n\n" + markdown_table(
        header, rows
    )


def _raw(done: run.Run) -> dict:
    return {
        "result": asdict(done.result) if done.result else None,
        "command": done.command,
        "wall_s": done.wall_s,
        "load": done.load,
        "failure": done.failure,
        "exit": done.exit,
    }
