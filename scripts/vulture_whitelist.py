"""Names vulture (run by scripts/test.sh at 60% confidence) reports as unused, though something outside our calls
reads them. Each line names the caller. A name that no caller needs belongs deleted, not listed here."""

# ruff: noqa: B018, F821  (bare names and attributes are how vulture whitelists are written)

# Typer commands, registered by decorator: Typer calls them.
compare
demo
_.__signature__  # Typer reads a derived command's signature (bench/cli/declared.py)
_.__annotations__
_.list_commands  # Click lists a group's commands through it (bench/cli/app.py: LazyGroup)
# Called by name from a registry: ReportKind (bench/report/__init__.py) and the target registry.
render_size
render_ceiling
render_interleave
render_trace_size
build_local
LightRAGTarget
OpenWebUITarget
# Enum members chosen by value from the command line (lightrag:MODE, ?fusion=, openwebui:VARIANT).
LOCAL
GLOBAL
RRF
COLLECTION
# asyncio's Protocol and httptools' parser callbacks (bench/load/client.py).
_.connection_made
_.data_received
_.eof_received
_.connection_lost
_.on_header
_.on_body
_.on_message_complete
# http.server's handler hooks and settings (bench/endpoints/meter_relay.py).
_.log_message
_.daemon_threads
_.close_connection
# httpx.Response reads its body from here (bench/core/http/deadline.py `_read_capped`).
_._content
protocol_version
do_DELETE
do_GET
do_PATCH
do_POST
do_PUT
# Signal handlers' and executors' signatures, fixed by the standard library.
cancel_futures
# Fields of typed records, written to results files and reports through dataclasses.asdict.
status_429  # the meter's counters per refusal kind, set by name (bench/endpoints/meter.py _STATUS_COUNTERS)
status_413
status_422
status_5xx
failed_calls
upload_concurrency
SECRET
prompt_tokens
completion_tokens
total_tokens
calls_without_usage
_.calls_without_usage
_.prompt_tokens
_.completion_tokens
_.total_tokens
model_kind
_.hosts
cores
python
packages
dims
hosts
cpu_per_request_us
ceiling_requests_per_s
loop_lag_p99_ms
token_flops
remeasured
confirmed
max_positions
utilization_pct
memory_used_mib
power_w
sm_clock_mhz
# Read by mypy only: the bound of declared.command's Request TypeVar, a string (bench/cli/declared.py).
DataclassInstance
# A TypedDict key written by keyword and read from results files (bench/grow/session.py, bench/report/grow.py).
distractor_source
# Request-body TypedDict keys written in dict displays and read by the servers (bench/endpoints/wire_bodies.py,
# bench/targets/app_descriptions.py).
include_references
response_type
user_prompt
k_reranker
hybrid_bm25_weight
collection_name
collection_names
return_text
return_documents
input
# Description TypedDict keys written in dict displays and stored with the results or hashed into the cache key
# (bench/endpoints/base.py EndpointDescription, ServedIdentity; bench/targets/descriptions.py).
cross_encoder_fingerprint
sha
api_version
cache_check
chunk_overlap
chunking
core_version
enable_rerank
enabled
first_stage
from_earlier_run
identical_groups
latency_parts
mapping
metered
rrf_k
served_identity
server_version
settings_applied
settings_before
skipped_empty_examples
splitter
vector_norms
vectors_unit_length
# The meter's health path, answered by value, asked by probes (bench/endpoints/meter_relay.py MeterPath).
HEALTH
# JSON-document TypedDict keys written in dict displays and read by json.dumps' readers (trend tools, CI):
# bench/gate/benchmark_json.py (pytest-benchmark's format), bench/gate/noise.py, bench/history/report_json.py,
# bench/core/dataset_blocks.py (the grow ladder's distractor_source, written in bench/datasets/distractors.py).
fullname
extra_info
machine_info
commit_info
benchmarks
needed_repeats
pooled_answers
score_resolution
run_name
change_points
newest_segment_runs
vocabulary
length_words
