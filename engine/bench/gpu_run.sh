#!/usr/bin/env bash
# The GPU benchmark, prepared for an NVIDIA H200 session: no new measurement after 6 minutes
# (the file notes what was left out), hard stop at 7:50.
#
#   pip install -e '.[gpu]'            # CuPy for CUDA 12 (cupy-cuda12x), next to NumPy
#   bash engine/bench/gpu_run.sh       # -> engine/bench/results/gpu-cupy-h200.json
#
# Sweeps the course model, the GPT-2-small-sized stack and a 4-layer Llama-3-8B-shaped stack
# (random weights) in float16 and float32, contexts 128 .. 32,768 for the Llama shape, timed
# with CUDA events. Peak bandwidth: the H200 datasheet's 4.8 TB/s (engine/bench/backend.py).
# Goal to read off the printed table: llama3-8b float16 at context 8192, "%peak" >= 60.
# Extra arguments are passed on, e.g. --quick, or --out for another GPU's file name.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-python}"
OUT="${OUT:-engine/bench/results/gpu-cupy-h200.json}"

"$PY" -c "import cupy; cupy.cuda.runtime.getDeviceCount()" 2>/dev/null || {
    echo "gpu_run.sh: CuPy with a CUDA GPU is needed: pip install -e '.[gpu]'" >&2
    exit 2
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
exec timeout 470 "$PY" -m engine.bench --backend cupy \
    --shapes llama3-8b,gpt2-small,course --dtypes float16,float32 --llama-layers 4 --deadline-s 360 \
    --out "$OUT" "$@"
