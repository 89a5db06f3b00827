#!/usr/bin/env bash
# The GPU benchmark, prepared for an NVIDIA H200 session: no new measurement after 6 minutes
# (the file notes what was left out), hard stop at 7:50.
#
#   pip install -e '.[gpu]'            # CuPy for CUDA 12 (cupy-cuda12x), next to NumPy
#   bash engine/bench/gpu_run.sh       # -> engine/bench/results/gpu-cupy-h200.json
#
# Where the results go: --out FILE, else $KV_BENCH_OUT, else the file above. A generic
# variable such as OUT is never read (one pointing at a folder once cost a whole GPU run).
# The path is printed and checked before anything runs. The Python: $KV_BENCH_PYTHON, else python.
#
# Sweeps the course model, the GPT-2-small-sized stack and a 4-layer Llama-3-8B-shaped stack
# (random weights) in float16 and float32, contexts 128 .. 32,768 for the Llama shape, timed
# with CUDA events. Peak bandwidth: the H200 datasheet's 4.8 TB/s (engine/bench/backend.py).
# Goal to read off the printed table: llama3-8b float16 at context 8192, "%peak" >= 60.
# Other arguments are passed on to python -m engine.bench, e.g. --quick.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${KV_BENCH_PYTHON:-python}"
out="${KV_BENCH_OUT:-engine/bench/results/gpu-cupy-h200.json}"
pass=()
while (($#)); do
    case "$1" in
        --out)
            (($# >= 2)) || { echo "gpu_run.sh: --out needs a file name" >&2; exit 2; }
            out="$2"; shift 2 ;;
        --out=*) out="${1#--out=}"; shift ;;
        *) pass+=("$1"); shift ;;
    esac
done
echo "gpu_run.sh: results will be written to $out"

"$PY" -c "import cupy; cupy.cuda.runtime.getDeviceCount()" 2>/dev/null || {
    echo "gpu_run.sh: CuPy with a CUDA GPU is needed: pip install -e '.[gpu]'" >&2
    exit 2
}
"$PY" -m engine.bench --backend cupy --check --out "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
exec timeout 470 "$PY" -m engine.bench --backend cupy \
    --shapes llama3-8b,gpt2-small,course --dtypes float16,float32 --llama-layers 4 --deadline-s 360 \
    --out "$out" ${pass[@]+"${pass[@]}"}
