"""Running each tool once, bounded in time, and reading its own output (docs/peers.md). Each runner returns a
`Run`: what the tool reported (benchmarks/peers_parse.py), the command as run, its wall time and the load average.

The peers run from their own environments (scripts/envs_peers.sh), offline: HF_HUB_OFFLINE with HF_HOME at a local
cache holding all-MiniLM-L6-v2's tokenizer (AIPerf counts tokens with one)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.peers_parse import (
    ToolResult,
    aiperf_rate,
    parse_aiperf,
    parse_guidellm,
    parse_locust_failures,
    parse_locust_stats,
    parse_ragbench,
    parse_size,
    parse_wrk,
)
from benchmarks.peers_truth import QueueCase, highest_passing

ROOT = Path(__file__).resolve().parents[1]
ENV_ROOT = Path(os.environ.get("RAGBENCH_ENV_DIR", Path.home() / ".cache/ragbench/envs"))
VERSIONS = {"aiperf": "0.13.0", "guidellm": "0.8.1", "locust": "2.47.0"}
TOKENIZER = "sentence-transformers/all-MiniLM-L6-v2"  # in the local cache scripts/envs_peers.sh builds
TEXT = "hello world"  # every tool sends this one short text (a batch of one): the ceiling is the client's
AIPERF_START_S = 15.0  # AIPerf's start-up (its services and tokenizer) before its window, on a loaded 2-core machine
GRACE_S = 240.0  # a tool's start-up and write-out beyond its measured window, before it is stopped


@dataclass
class Run:
    result: ToolResult | None
    command: str
    wall_s: float
    load: str
    failure: str = ""
    exit: int | None = None  # the tool's exit status (what a CI job would see)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def peer_bin(tool: str, name: str) -> Path:
    """A peer's executable in its own environment; a missing one names the script that builds it."""
    path = ENV_ROOT / f"peers-{tool}-{VERSIONS[tool]}" / "bin" / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run scripts/envs_peers.sh")
    return path


def offline_env() -> dict[str, str]:
    hf = ENV_ROOT / "peers-hf-cache"
    return {
        **os.environ,
        "HF_HOME": str(hf),
        "HF_HUB_CACHE": str(hf / "hub"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "NO_COLOR": "1",
    }


def execute(argv: list[str], limit_s: float, cwd: Path | None = None) -> tuple[str, float, str, int | None]:
    """(stdout + stderr, wall seconds, load average at the end, exit status); a tool past `limit_s` is stopped
    (its process group) and what it printed is kept."""
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=offline_env(),
        cwd=cwd,
        start_new_session=True,
    )
    try:
        out, _ = process.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        out, _ = process.communicate()
        out += f"\n[stopped after {limit_s:.0f} s]"
    return out, time.monotonic() - started, load_average(), process.returncode


def shown(argv: list[str]) -> str:
    """The command as a reader would type it: environments' paths shortened, the temporary folders named OUT."""
    text = shlex.join(argv).replace(str(ENV_ROOT), "$ENVS").replace(sys.executable, "python")
    return text.replace(tempfile.gettempdir() + "/", "")


def attempt(argv: list[str], limit_s: float, read, cwd: Path | None = None) -> Run:
    """Run a tool and read its output with `read(stdout)`; a tool that fails or prints nothing readable is a Run
    without a result, its last line kept as the failure."""
    out, wall, load, code = execute(argv, limit_s, cwd)
    try:
        return Run(read(out), shown(argv), wall, load, exit=code)
    except (ValueError, KeyError, OSError, IndexError, json.JSONDecodeError) as exc:
        tail = [line for line in out.strip().splitlines() if line.strip()][-2:]
        failure = f"{type(exc).__name__}: {exc}; " + " / ".join(tail)[-200:]
        return Run(None, shown(argv), wall, load, failure, code)


def wrk(url: str, path: str, body: str, seconds: float, connections: int = 64) -> Run:
    """wrk, one thread, `connections` in flight (a closed loop), POSTing `body` to `path`."""
    lua = Path(tempfile.mkdtemp(prefix="peers-wrk-")) / "post.lua"
    lua.write_text(
        f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\nwrk.headers["Content-Type"] = "application/json"\n'
    )
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{int(seconds)}s", "--latency", "-s", str(lua), url + path]
    return attempt(argv, seconds + GRACE_S, parse_wrk)


def ragbench_load(spec: str, args: list[str], seconds: float) -> Run:
    """`ragbench load` with this project's venv, one point; read from its results.jsonl."""
    out = Path(tempfile.mkdtemp(prefix="peers-ragbench-"))
    texts = out / "texts.txt"
    texts.write_text(TEXT + "\n")
    argv = [sys.executable, "-m", "bench", "load", "-e", spec, *args, "--duration", f"{seconds:g}s", "--warmup", "1s"]
    argv += ["--texts", str(texts), "--out", str(out / "run"), "--overwrite"]
    return attempt(argv, seconds + GRACE_S, lambda _: parse_ragbench((out / "run/results.jsonl").read_text()), ROOT)


LOCUSTFILE = """import os
from locust import FastHttpUser, constant, constant_throughput, task

PACE = float(os.environ.get("PEERS_PACE", "0"))


class Embedder(FastHttpUser):
    wait_time = constant_throughput(PACE) if PACE else constant(0)
    network_timeout = 30.0
    connection_timeout = 30.0

    @task
    def embed(self):
        self.client.post(os.environ["PEERS_PATH"], data=os.environ["PEERS_BODY"],
                         headers={"content-type": "application/json"})
"""


def locust(url: str, path: str, body: str, seconds: float, users: int, pace: float = 0.0) -> Run:
    """Locust headless, one process, FastHttpUser: `users` users spawned at once; `pace` > 0 gives each user
    constant_throughput(pace) (requests/s a user, Locust's way to a target rate), else no wait (a closed loop)."""
    folder = Path(tempfile.mkdtemp(prefix="peers-locust-"))
    (folder / "locustfile.py").write_text(LOCUSTFILE)
    os.environ.update(PEERS_PATH=path, PEERS_BODY=body, PEERS_PACE=str(pace))
    argv = [str(peer_bin("locust", "locust")), "-f", str(folder / "locustfile.py"), "--headless", "--only-summary"]
    argv += ["-u", str(users), "-r", str(users), "-t", f"{int(seconds)}s", "--host", url, "--csv", str(folder / "s")]

    def read(_: str) -> ToolResult:
        result = parse_locust_stats((folder / "s_stats.csv").read_text())
        result.errors_by_class = parse_locust_failures((folder / "s_failures.csv").read_text())
        return result

    return attempt(argv, seconds + GRACE_S, read)


@dataclass
class Answer:
    """A saturation answer: the rate a tool's search or sweep gives for the SLO (None: none), and how it ran."""

    rate: float | None
    run: Run
    note: str = ""


def ragbench_size(url: str, case: QueueCase, budget_s: float) -> Answer:
    """`ragbench size` with its defaults, `--max-time` the budget: its saturation rate (the highest decided pass)."""
    out = Path(tempfile.mkdtemp(prefix="peers-size-"))
    slo = f"p{case.percentile:g}={case.slo_ms:g}ms"
    argv = [sys.executable, "-m", "bench", "size", "-e", f"q=openai@{url}/v1?model=peers", "--slo", slo]
    argv += ["--max-time", f"{budget_s:g}s", "--no-nvml", "--out", str(out / "run"), "--overwrite"]
    done = attempt(argv, budget_s + GRACE_S, lambda _: ToolResult(), ROOT)
    try:
        rate, note = parse_size((out / "run/results.jsonl").read_text())
    except (OSError, ValueError, KeyError, StopIteration) as exc:
        return Answer(None, done, f"{type(exc).__name__}: {exc}")
    return Answer(rate, done, note)


def aiperf_argv(url: str, load: list[str], seconds: float, out: Path) -> list[str]:
    """AIPerf against OpenAI's embeddings route, the one text as its dataset, its tokenizer from the local cache."""
    data = out / "texts.jsonl"
    data.write_text(json.dumps({"text": TEXT}) + "\n")
    argv = [str(peer_bin("aiperf", "aiperf")), "profile", "--model", "peers", "--url", url]
    argv += ["--endpoint-type", "embeddings", "--tokenizer", TOKENIZER, "--input-file", str(data)]
    argv += ["--custom-dataset-type", "single_turn", "--benchmark-duration", f"{seconds:g}"]
    return [*argv, "--ui-type", "none", "--artifact-dir", str(out / "artifacts"), *load]


def aiperf(url: str, load: list[str], seconds: float) -> Run:
    """One AIPerf profile run; read from its JSON export."""
    out = Path(tempfile.mkdtemp(prefix="peers-aiperf-"))
    argv = aiperf_argv(url, load, seconds, out)

    def read(_: str) -> ToolResult:
        [export] = sorted((out / "artifacts").rglob("profile_export_aiperf.json"))
        return parse_aiperf(export.read_text())

    return attempt(argv, seconds + GRACE_S, read)


SWEEP_SHARES = (0.6, 0.7, 0.8, 0.9)  # of the server's capacity: the rates a user sweeping by hand would try


def aiperf_sweep(url: str, case: QueueCase, budget_s: float) -> Answer:
    """AIPerf's own sweep (one invocation, `--request-rate` a list: its magic-list sweep), Poisson arrivals at rates
    spread below the server's capacity, the budget shared among them; the answer is the highest rate whose
    percentile, as AIPerf reports it, keeps the SLO (below the first that does not)."""
    out = Path(tempfile.mkdtemp(prefix="peers-aiperf-"))
    rates = [round(share * case.capacity, 2) for share in SWEEP_SHARES]
    load = ["--request-rate", ",".join(f"{r:g}" for r in rates), "--arrival-pattern", "poisson"]
    seconds = max(5.0, (budget_s - AIPERF_START_S) / len(rates))
    done = attempt(aiperf_argv(url, load, seconds, out), budget_s + GRACE_S, lambda _: ToolResult())
    key = f"p{case.percentile:g}_ms"
    points = []
    for export in sorted((out / "artifacts").rglob("profile_export_aiperf.json")):
        text = export.read_text()
        rate, result = aiperf_rate(text), parse_aiperf(text)
        if rate is not None and getattr(result, key) is not None:
            points.append((rate, getattr(result, key)))
    tried = ", ".join(f"{r:g}/s: {v:.0f} ms" for r, v in sorted(points))
    return Answer(highest_passing(points, case.slo_ms), done, f"p{case.percentile:g} at {tried}" if tried else "")


def size_answers(url: str, case: QueueCase, budget_s: float) -> list[tuple[str, Answer]]:
    return [
        ("ragbench size", ragbench_size(url, case, budget_s)),
        ("AIPerf, a sweep of request rates", aiperf_sweep(url, case, budget_s)),
        ("GuideLLM, its sweep profile", guidellm_sweep(url, case, budget_s)),
    ]


def guidellm_argv(url: str, profile: str, seconds: float, out: Path) -> list[str]:
    """GuideLLM 0.8's `run` against OpenAI's embeddings route: synthetic texts of 3 tokens (a text file runs out:
    GuideLLM does not cycle a dataset), the tokenizer named by the backend's model, from the local cache."""
    backend = f"kind=openai_http,target={url},model={TOKENIZER},request_format=/v1/embeddings"
    argv = [str(peer_bin("guidellm", "guidellm")), "run", "--backend", backend, "--profile", profile]
    argv += ["--constraint", f"kind=max_duration,seconds={seconds:g}", "--data", "kind=synthetic_text,prompt_tokens=3"]
    return [*argv, "--output", f"kind=json,path={out / 'out.json'}", "--disable-progress"]


def guidellm(url: str, profile: str, seconds: float) -> Run:
    """One GuideLLM run of one benchmark (a `concurrent` or `constant` profile); read from its JSON output."""
    out = Path(tempfile.mkdtemp(prefix="peers-guidellm-"))
    argv = guidellm_argv(url, profile, seconds, out)
    return attempt(argv, seconds + GRACE_S, lambda _: parse_guidellm((out / "out.json").read_text())[-1][1])


def guidellm_sweep(url: str, case: QueueCase, budget_s: float) -> Answer:
    """GuideLLM's own `sweep` profile (synchronous, throughput, then Poisson rates between), the budget shared
    among its benchmarks; the answer is the highest rate whose percentile keeps the SLO."""
    out = Path(tempfile.mkdtemp(prefix="peers-guidellm-"))
    size = 5  # GuideLLM writes its output only when every benchmark is done: each gets a share of the budget, less
    # its start-up (~a benchmark's worth on a loaded machine)
    argv = guidellm_argv(url, f"kind=sweep,sweep_size={size},strategy_type=poisson", budget_s / (size + 1), out)
    done = attempt(argv, budget_s + GRACE_S, lambda _: ToolResult())
    try:
        benchmarks = parse_guidellm((out / "out.json").read_text())
    except (OSError, ValueError, KeyError) as exc:
        return Answer(None, done, f"{type(exc).__name__}: {exc}")
    key = f"p{case.percentile:g}_ms"
    points = [(rate, getattr(r, key)) for rate, r in benchmarks if rate is not None and getattr(r, key) is not None]
    tried = ", ".join(f"{r:.2f}/s: {v:.0f} ms" for r, v in points)
    return Answer(highest_passing(points, case.slo_ms), done, f"p{case.percentile:g} at {tried}")
