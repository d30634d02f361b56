"""GPU telemetry through NVML (nvidia-ml-py): sampled in a background thread, summarised per sweep point.

Every GPU on this host is sampled at `hz` (default 20 Hz, at least 10) for utilisation, memory
used, power and SM clock, each sample stamped with `time.monotonic()` (one clock for every process
on a Linux host). `window(start, end)` gives the mean and max of each quantity over the samples
inside a point's measured interval. Without NVML (no driver, no GPU) the sampler is not an error:
`available` is False and `reason` says why, once, for the report.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from bench.endpoints.spec import EndpointSpec
from bench.results.schema.sizing import GpuQuantity, GpuWindowBlock, MeanMax

LOOPBACK = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
QUANTITIES: tuple[GpuQuantity, ...] = ("utilization_pct", "memory_used_mib", "power_w", "sm_clock_mhz")


@dataclass
class GpuSample:
    t: float  # time.monotonic()
    gpu: int
    utilization_pct: float
    memory_used_mib: float
    power_w: float
    sm_clock_mhz: float


@dataclass
class GpuWindow:
    """One GPU over one sweep point's measured interval: {quantity: {"mean", "max"}}."""

    gpu: int
    name: str
    samples: int
    stats: dict[GpuQuantity, MeanMax] = field(default_factory=dict)

    def to_dict(self) -> GpuWindowBlock:
        block = GpuWindowBlock(gpu=self.gpu, name=self.name, samples=self.samples)
        for quantity, figures in self.stats.items():
            block[quantity] = figures
        return block


class GpuSampler:
    """Samples every GPU NVML sees, in a daemon thread, until `stop()` (or the `with` block ends).

    `nvml` is the pynvml module; tests pass a fake with the same functions.
    """

    def __init__(self, hz: float = 20.0, nvml: Any = None):
        if hz < 10:
            raise ValueError("GPU telemetry samples at 10 Hz or more")
        self.interval = 1.0 / hz
        self.samples: list[GpuSample] = []
        self.names: list[str] = []
        self.reason: str | None = None  # why there is no telemetry, when there is none
        self._nvml = nvml
        self._handles: list[Any] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return bool(self._handles)

    def start(self) -> GpuSampler:
        try:
            if self._nvml is None:
                import pynvml

                self._nvml = pynvml
            self._nvml.nvmlInit()
            count = self._nvml.nvmlDeviceGetCount()
            self._handles = [self._nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            self.names = [_text(self._nvml.nvmlDeviceGetName(h)) for h in self._handles]
        except ImportError:
            self.reason = "no GPU telemetry: nvidia-ml-py is not installed"
        except Exception as exc:  # pynvml raises NVMLError subclasses: no driver, no library, no permission
            self.reason = f"no GPU telemetry: NVML unavailable ({exc})"
            self._handles = []
        if self._handles:
            self._thread = threading.Thread(target=self._run, name="gpu-telemetry", daemon=True)
            self._thread.start()
        elif self.reason is None:
            self.reason = "no GPU telemetry: NVML sees no GPU on this host"
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
            with contextlib.suppress(Exception):  # best effort: the samples are already taken
                self._nvml.nvmlShutdown()

    def __enter__(self) -> GpuSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            taken = [s for s in (self._sample(i, h) for i, h in enumerate(self._handles)) if s is not None]
            with self._lock:
                self.samples.extend(taken)
            next_at += self.interval
            # Fixed-rate schedule: a slow NVML call shortens the next wait instead of drifting the rate.
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _sample(self, index: int, handle: Any) -> GpuSample | None:
        nvml = self._nvml
        try:
            return GpuSample(
                t=time.monotonic(),
                gpu=index,
                utilization_pct=float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu),
                memory_used_mib=nvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20,
                power_w=nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,  # milliwatts
                sm_clock_mhz=float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
            )
        except Exception:  # one failed read (GPU busy resetting) loses one sample, not the run
            return None

    def window(self, start: float, end: float) -> list[GpuWindow]:
        """Mean and max of every quantity per GPU over samples with start <= t <= end (monotonic seconds)."""
        with self._lock:
            inside = [s for s in self.samples if start <= s.t <= end]
        windows = []
        for index, name in enumerate(self.names):
            mine = [s for s in inside if s.gpu == index]
            stats: dict[GpuQuantity, MeanMax] = {}
            if mine:
                for q in QUANTITIES:
                    values = [getattr(s, q) for s in mine]
                    stats[q] = {"mean": sum(values) / len(values), "max": max(values)}
            windows.append(GpuWindow(gpu=index, name=name, samples=len(mine), stats=stats))
        return windows


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def on_this_host(spec: EndpointSpec) -> bool:
    return spec.url is None or (urlsplit(spec.url).hostname or "") in LOOPBACK


@contextlib.contextmanager
def gpu_telemetry(nvml: bool | None, specs: list[EndpointSpec]) -> Iterator[tuple[GpuSampler | None, str]]:
    """This host's GPUs sampled while the endpoints are sized (with `nvml`, or by default when an endpoint is on
    this host), and the sentence that says where the telemetry comes from."""
    on_host = any(on_this_host(s) for s in specs)
    sampler = GpuSampler().start() if (nvml if nvml is not None else on_host) else None
    if sampler is None:
        telemetry = (
            "no GPU telemetry: --no-nvml"
            if nvml is False
            else "no GPU telemetry: the server is not on this host (--nvml samples this host's GPUs anyway)"
        )
    else:
        telemetry = sampler.reason or (
            f"NVML: {len(sampler.names)} GPU(s) ({', '.join(sorted(set(sampler.names)))}) "
            f"at {1 / sampler.interval:g} Hz, mean and max over each point's measured window"
        )
    try:
        yield sampler, telemetry
    finally:
        if sampler is not None:
            sampler.stop()
