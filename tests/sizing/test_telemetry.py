"""GPU telemetry with a fake NVML module: sampling rate, per-point windows, and no GPU as a plain fact."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.sizing.telemetry import GpuSampler


class FakeNvml:
    """The pynvml functions the sampler calls; utilisation rises by 1 per read so windows can be checked."""

    NVML_CLOCK_SM = 1

    class NVMLError(Exception):
        pass

    def __init__(self, gpus: int = 1, fail_init: bool = False):
        self.gpus = gpus
        self.fail_init = fail_init
        self.reads = 0
        self.shutdown = False

    def nvmlInit(self):
        if self.fail_init:
            raise self.NVMLError("Driver Not Loaded")

    def nvmlDeviceGetCount(self):
        return self.gpus

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, handle):
        return b"NVIDIA H200"

    def nvmlDeviceGetUtilizationRates(self, handle):
        self.reads += 1
        return SimpleNamespace(gpu=50 + handle * 10, memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(used=(1000 + handle) * 2**20, total=0, free=0)

    def nvmlDeviceGetPowerUsage(self, handle):
        return 300_000 + 1000 * handle  # milliwatts

    def nvmlDeviceGetClockInfo(self, handle, clock):
        assert clock == self.NVML_CLOCK_SM
        return 1980

    def nvmlShutdown(self):
        self.shutdown = True


def test_samples_at_the_asked_rate_and_summarises_a_window():
    nvml = FakeNvml(gpus=2)
    with GpuSampler(hz=20, nvml=nvml) as sampler:
        time.sleep(0.2)
        start = time.monotonic()
        time.sleep(1.0)
        end = time.monotonic()
        time.sleep(0.2)
    assert nvml.shutdown and sampler.available and sampler.reason is None
    windows = sampler.window(start, end)
    assert [w.name for w in windows] == ["NVIDIA H200", "NVIDIA H200"]
    for w in windows:
        # 20 Hz over 1 s: 20 samples (±2 for the edges and a loaded machine's scheduling)
        assert 18 <= w.samples <= 22, w.samples
    first, second = windows
    assert first.stats["utilization_pct"] == {"mean": 50.0, "max": 50.0}
    assert second.stats["power_w"] == {"mean": 301.0, "max": 301.0}
    assert first.stats["memory_used_mib"]["max"] == 1000.0
    assert first.stats["sm_clock_mhz"]["mean"] == 1980.0
    # every sample outside the window is left out
    assert sum(w.samples for w in windows) < len(sampler.samples)


def test_window_without_samples_is_empty_not_an_error():
    with GpuSampler(hz=10, nvml=FakeNvml()) as sampler:
        pass
    (window,) = sampler.window(0.0, 1.0)  # long before the sampler started
    assert window.samples == 0 and window.stats == {}


def test_no_gpu_is_a_reason_not_an_exception():
    sampler = GpuSampler(nvml=FakeNvml(fail_init=True)).start()
    sampler.stop()
    assert not sampler.available
    assert "Driver Not Loaded" in sampler.reason
    assert sampler.window(0, time.monotonic()) == []

    empty = GpuSampler(nvml=FakeNvml(gpus=0)).start()
    empty.stop()
    assert not empty.available and "no GPU" in empty.reason


def test_real_pynvml_agrees_with_the_host():
    sampler = GpuSampler().start()
    sampler.stop()
    if Path("/dev/nvidia0").exists():
        assert sampler.available and sampler.samples
    else:  # this machine: no NVIDIA driver, which is a fact for the report, not an error
        assert not sampler.available
        assert sampler.reason.startswith("no GPU telemetry")


def test_rate_below_ten_hz_is_refused():
    with pytest.raises(ValueError):
        GpuSampler(hz=5)
