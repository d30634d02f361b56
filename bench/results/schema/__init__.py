"""The results file: one versioned schema for every command, JSON Lines, written record by record.

Every line is one JSON object with a `record` field naming its type. The first line is the `run`
header (which command wrote the file); an `end` record comes last. A file without an `end` record was
interrupted: everything before the cut is still valid. Between them, each command writes its own
record types (grouped below by command):
- quality / demo: per target a `target` record and one `query` record per query (written when the
  target finishes); `metrics` and `comparison` records when scoring is done;
- identity: `identity_endpoint` per endpoint, `identity_embed_pair` / `identity_rerank_pair` per
  compared pair, then one `identity` summary with the verdict;
- doctor: one `doctor_finding` per finding;
- load: one `load_point` per sweep point (the header's `load` holds endpoints and sweep settings); with
  `--interleave`, also one `interleaved` record per point (the paired rounds of two endpoints);
- ingest: one `ingest_point` per target and settings combination, one `ingest_summary` per target;
- ceiling: one `ceiling_point` per measured point; size: load points, `gpu_telemetry` and `sizing` records;
- grow: one `grow_rung` per rung and target (written as each finishes), one `grow` summary per target.
Reports are built from this file alone, so every number in a report traces back to a record here.
docs/results.schema.json is generated from these classes (`python -m bench.results.json_schema`).
A float that is not finite (NaN: no value) is written as null and read back as NaN.
"""

from __future__ import annotations

from bench.results.schema.conventions import WRITTEN_WHEN_SET
from bench.results.schema.doctor import DoctorFinding
from bench.results.schema.grow import GrowRungRecord, GrowSummaryRecord, GrowthLaw, RungStatus
from bench.results.schema.identity import (
    Cause,
    IdentityEmbedPairRecord,
    IdentityEndpointRecord,
    IdentityRerankPairRecord,
    IdentitySummaryRecord,
    IdentityVerdict,
    NormRange,
    TokenLengthBucket,
    WorstText,
)
from bench.results.schema.ingest import (
    DirectIngest,
    EndpointCalls,
    IngestPointRecord,
    IngestStatus,
    IngestSummaryRecord,
)
from bench.results.schema.interleave import InterleavedRecord, InterleavedRound, InterleavedRoundRecord, PairedFigure
from bench.results.schema.load import (
    ClientView,
    DocumentsDistribution,
    Drain,
    Latencies,
    LatencyIntervals,
    LatencySummary,
    LengthDistribution,
    LoadPointRecord,
    LoadRequests,
    Loop,
    MetricHistogram,
    Op,
    PointIntervals,
    PointRepeat,
    PointStatus,
    QuantileIntervals,
    ServerMetrics,
    ServerTimes,
    Spread,
    Throughput,
    ThroughputIntervals,
)
from bench.results.schema.quality import (
    ComparisonRecord,
    MetricRecord,
    QueryRecord,
    Relevance,
    TargetRecord,
    TargetSpecRecord,
    TargetStatus,
)
from bench.results.schema.run import (
    DOCTOR_DOCUMENT,
    IDENTITY_DOCUMENT,
    QUALITY_COMMANDS,
    READABLE_VERSIONS,
    SCHEMA,
    VERSION,
    DatasetInfo,
    EndRecord,
    EndStatus,
    GrowLadder,
    RunCommand,
    RunHeader,
)
from bench.results.schema.sizing import (
    CeilingPoint,
    GpuTelemetryRecord,
    SaturationProbe,
    SaturationSummary,
    SizingLine,
    SizingRecord,
    SpeedOutcome,
    TraceSizeRecord,
    TraceSpeedProbe,
)

RECORD_TYPES: dict[str, type] = {
    cls.record: cls
    for cls in (
        RunHeader,
        EndRecord,
        TargetRecord,
        QueryRecord,
        MetricRecord,
        ComparisonRecord,  # quality
        IdentityEndpointRecord,
        IdentityEmbedPairRecord,
        IdentityRerankPairRecord,
        IdentitySummaryRecord,  # identity
        DoctorFinding,  # doctor
        LoadPointRecord,
        InterleavedRecord,
        InterleavedRoundRecord,  # load
        CeilingPoint,
        GpuTelemetryRecord,
        SizingRecord,  # ceiling, size
        TraceSizeRecord,  # size --trace
        IngestPointRecord,
        IngestSummaryRecord,  # ingest
        GrowRungRecord,
        GrowSummaryRecord,  # grow
    )
}

__all__ = [
    "DOCTOR_DOCUMENT",
    "IDENTITY_DOCUMENT",
    "QUALITY_COMMANDS",
    "READABLE_VERSIONS",
    "RECORD_TYPES",
    "SCHEMA",
    "VERSION",
    "WRITTEN_WHEN_SET",
    "Cause",
    "CeilingPoint",
    "ClientView",
    "ComparisonRecord",
    "DatasetInfo",
    "DirectIngest",
    "DoctorFinding",
    "DocumentsDistribution",
    "Drain",
    "EndRecord",
    "EndStatus",
    "EndpointCalls",
    "GpuTelemetryRecord",
    "GrowLadder",
    "GrowRungRecord",
    "GrowSummaryRecord",
    "GrowthLaw",
    "IdentityEmbedPairRecord",
    "IdentityEndpointRecord",
    "IdentityRerankPairRecord",
    "IdentitySummaryRecord",
    "IdentityVerdict",
    "IngestPointRecord",
    "IngestStatus",
    "IngestSummaryRecord",
    "InterleavedRecord",
    "InterleavedRound",
    "InterleavedRoundRecord",
    "Latencies",
    "LatencyIntervals",
    "LatencySummary",
    "LengthDistribution",
    "LoadPointRecord",
    "LoadRequests",
    "Loop",
    "MetricHistogram",
    "MetricRecord",
    "NormRange",
    "Op",
    "PairedFigure",
    "PointIntervals",
    "PointRepeat",
    "PointStatus",
    "QuantileIntervals",
    "QueryRecord",
    "Relevance",
    "RunCommand",
    "RunHeader",
    "RungStatus",
    "SaturationProbe",
    "SaturationSummary",
    "ServerMetrics",
    "ServerTimes",
    "SizingLine",
    "SizingRecord",
    "SpeedOutcome",
    "Spread",
    "TargetRecord",
    "TargetSpecRecord",
    "TargetStatus",
    "Throughput",
    "ThroughputIntervals",
    "TokenLengthBucket",
    "TraceSizeRecord",
    "TraceSpeedProbe",
    "WorstText",
]
