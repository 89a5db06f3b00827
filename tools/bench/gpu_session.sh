#!/usr/bin/env bash
# The GPU session's one command, for a session that is lent the H200 (the device tool):
#
#   run(command="bash tools/bench/gpu_session.sh", carry=[".gpu-carry"], timeout_s=360)
#
# It installs nothing there. python3 on the H200 image has CuPy 14.2 (cupy-cuda13x), NumPy,
# torch and transformers; pytest, if the image lacks it, comes in the carried folder
# .gpu-carry/site, made here before the session (pure Python, about 3 MB):
#
#   python3 -m pip install --target .gpu-carry/site pytest
#
# (.gpu-carry is git-ignored, so it travels only because carry names it.) What it writes goes
# under $OUT, the folder the device tool brings back:
#
#   $OUT/gpu_check.json   python3 -m tools.bench.gpu_check's document, rewritten after every
#                         stage (a run cut short keeps the stages it finished)
#   $OUT/gpu_check.log    everything it printed, the estimate first
#   $OUT/environment.txt  nvidia-smi, the versions, whether pytest came from the carry
#
# gpu_check estimates its own time before it starts (about 190 s on an H200) and is stopped
# at 285 s here (SIGTERM, then SIGKILL 15 s later), inside the device call's 360 s; the rest of
# a 15-minute lease is the machine's start. Commit $OUT/gpu_check.json as
# engine/bench_results/gpu_checks/h200-<commit>.json for the benchmark page.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:?gpu_session.sh writes under OUT, the output folder of the device tool}"
PY="${KV_BENCH_PYTHON:-python3}"
{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
    "$PY" -c "import sys, numpy, cupy; print(sys.version); print('numpy', numpy.__version__, 'cupy', cupy.__version__)" 2>&1
    "$PY" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" 2>&1
    if ! "$PY" -c "import pytest" 2>/dev/null; then
        if [ -d .gpu-carry/site ]; then
            export PYTHONPATH=".gpu-carry/site${PYTHONPATH:+:$PYTHONPATH}"
            echo "pytest: from the carried .gpu-carry/site"
        else
            echo "pytest: missing, and no .gpu-carry/site was carried: the tests stage will record the error"
        fi
    fi
} > "$out/environment.txt" 2>&1  # a group, not a subshell: its PYTHONPATH stays
timeout -k 15 285 "$PY" -m tools.bench.gpu_check --out "$out/gpu_check.json" 2>&1 | tee "$out/gpu_check.log"
status=${PIPESTATUS[0]}
echo "gpu_session.sh: gpu_check exited $status; the document: $out/gpu_check.json" | tee -a "$out/gpu_check.log"
exit "$status"
