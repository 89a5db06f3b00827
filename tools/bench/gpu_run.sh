#!/usr/bin/env bash
# The GPU session in one script, for an NVIDIA H200; it ends within 8 minutes:
#   1. the GPU correctness tests (pytest -m gpu: the CUDA kernel set against the NumPy
#      references, the fused step against the NumPy engine); at most 100 s
#   2. the sweep (python -m tools.bench --backend cupy --step auto): the course model, the
#      GPT-2-small-sized stack and a 4-layer Llama-3-8B-shaped stack in float16 and float32,
#      contexts 128 .. 32,768 for the Llama shape, CUDA events; kernel launches per step and
#      the Hugging Face transformers comparison on the same GPU, shape and weights in the
#      results. No new measurement after 240 s; at 330 s it is stopped (SIGTERM) and writes
#      the runs it has finished.
#
#   pip install -e '.[gpu,reference]'   # CuPy (match the CUDA major version), PyTorch, transformers
#   bash tools/bench/gpu_run.sh        # -> engine/bench_results/results/gpu-cupy-h200.json
# (The H200 image of the device sessions has all of them for its python3: nothing to install.)
#
# Where the results go: --out FILE, else $KV_BENCH_OUT, else the file above. A generic
# variable such as OUT is never read (one pointing at a folder once cost a whole GPU run).
# The path is printed and checked before anything runs. The Python: $KV_BENCH_PYTHON, else
# python3 (the interpreter that has CuPy and torch on the H200 image; a bare "python" may not
# exist there). If it cannot use CuPy on a GPU, its own error is shown, not a guess.
# Other arguments are passed on to python -m tools.bench, e.g. --quick.
# If the correctness tests fail, the sweep times the engine's per-op path (--step engine)
# and the script exits 1 after it: the numbers of a wrong kernel are worth nothing.
# Goal to read off the printed table: llama3-8b float16 at context 8192, "%peak" >= 60.
# Issue 17's numbers (CUDA graph replay, gemv TB/s, the goals judged) come from the other
# prepared command: python3 -m tools.bench.gpu_check --out results.json (under 5 minutes), and
# for a device session tools/bench/gpu_session.sh (its output under $OUT).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${KV_BENCH_PYTHON:-python3}"
out="${KV_BENCH_OUT:-engine/bench_results/results/gpu-cupy-h200.json}"
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

if ! why=$("$PY" -c "import cupy; cupy.cuda.runtime.getDeviceCount()" 2>&1 >/dev/null); then
    echo "gpu_run.sh: CuPy with a CUDA GPU is needed ($PY could not use one; pip install -e '.[gpu]'):" >&2
    printf '%s\n' "$why" | tail -n 4 | sed 's/^/    /' >&2
    exit 2
fi
"$PY" -m tools.bench --backend cupy --check --out "$out" ${pass[@]+"${pass[@]}"}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

step=auto
status=0
echo "gpu_run.sh: 1/2 GPU correctness tests"
if ! timeout 100 "$PY" -m pytest -q -m gpu -p no:cacheprovider tests/engine/gpu; then
    echo "gpu_run.sh: the GPU correctness tests failed: the sweep times the engine's per-op path" >&2
    step=engine
    status=1
fi
echo "gpu_run.sh: 2/2 sweep, cached step: $step"
timeout -k 20 330 "$PY" -m tools.bench --backend cupy --step "$step" \
    --shapes llama3-8b,gpt2-small,course --dtypes float16,float32 --llama-layers 4 --deadline-s 240 \
    --out "$out" ${pass[@]+"${pass[@]}"} || status=$?
exit "$status"
