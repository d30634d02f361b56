"""ragbench beside the tools users would pick instead — wrk, AIPerf, GuideLLM, Locust — on the same loopback servers,
the same text and the same truths, in one run (docs/peers.md; issue 48).

    scripts/envs_peers.sh                      # once: the peers' own environments and an offline tokenizer cache
    PYTHONPATH=. .venv/bin/python benchmarks/peers.py [--seconds 10] [--rounds 1] [--sections ceiling,stall,size]
        [--page docs/peers.md]

1. ceiling: nginx answering TEI's and OpenAI's embedding shapes; closed loop, 64 in flight; requests/s of each tool,
   the tools alternating (round 2 runs them in reverse order) so a drift in the machine's load falls on all alike;
2. stall: 200 ms of every 1,000 ms the server answers nothing, 2 ms otherwise; 200 requests/s open loop; each tool's
   p99 against the truth timed from the intended send (benchmarks/peers_truth.py: 192 ms);
3. size: queue servers of known truth; `ragbench size` and the peers' own sweeps, each bounded in time;
4. what each reported (texts/s, tokens/s, server timing, errors by class) from its own output.

Writes the measured tables between the markers of --page (and prints them); every figure comes from this run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import peers_run as run  # noqa: E402
from benchmarks.peers_sections import ceiling_section, features_section, size_section, stall_section  # noqa: E402
from benchmarks.peers_table import replace_measured  # noqa: E402


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def machine_line() -> str:
    versions = ", ".join(f"{tool} {version}" for tool, version in run.VERSIONS.items())
    wrk = run.execute(["wrk", "-v"], 10)[0].splitlines()[0].split(" [")[0]
    nginx = run.execute(["/usr/sbin/nginx", "-v"], 10)[0].strip().replace("nginx version: ", "")
    return (
        f"Machine: {os.cpu_count()} CPUs ({cpu_model()}), Python {platform.python_version()}; "
        f"load average at start {run.load_average()}. Versions: ragbench (this commit), {versions}, {wrk}, {nginx}."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="each tool's measured window")
    parser.add_argument("--rounds", type=int, default=1, help="ceiling rounds (even ones in reverse order)")
    parser.add_argument("--sections", default="ceiling,stall,size")
    parser.add_argument("--size-budget", type=float, default=120.0, help="seconds each tool gets per size case")
    parser.add_argument("--cases", default="50:0:1:95:250", help="MS:CV:SLOTS:PCT:SLO_MS,...")
    parser.add_argument("--page", type=Path, default=None, help="write the tables into this page's markers")
    parser.add_argument("--json", type=Path, default=ROOT / "reports/peers/peers.json")
    args = parser.parse_args()
    sections = args.sections.split(",")
    parts, raw = [machine_line()], {}
    print(parts[0], flush=True)
    if "ceiling" in sections:
        text, raw["ceiling"] = ceiling_section(args.seconds, args.rounds)
        parts.append(text)
    if "stall" in sections:
        text, raw["stall"] = stall_section(args.seconds)
        parts.append(text)
    if "size" in sections:
        text, raw["size"] = size_section(args.cases, args.size_budget)
        parts.append(text)
    parts.append(features_section(raw))
    parts.append(f"Load average at the end: {run.load_average()}.")
    measured = "\n\n".join(parts)
    print(measured)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(raw, indent=1, default=str))
    if args.page is not None:
        args.page.write_text(replace_measured(args.page.read_text(), measured))


if __name__ == "__main__":
    main()
