#!/usr/bin/env bash
# The checks that need a GPU, as one script: the CUDA tests (CPU/GPU agreement), then GPU speed.
#
#   bash benchmarks/gpu_check.sh            # from the repository root, on a machine with CUDA
#
# CI has no GPU, so the CUDA tests skip there; run this wherever one is at hand. Logs go to
# $OUT (default /tmp/gpu_check). Each step has its own time limit, so one slow step cannot
# hide the others' output. Speed figures compare the GPU with this machine's CPU, in one run.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
OUT="${OUT:-/tmp/gpu_check}"
mkdir -p "$OUT"

nvidia-smi -L
python3 -c "import torch, numpy, numba, gymnasium; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'numpy', numpy.__version__, 'numba', numba.__version__, 'gymnasium', gymnasium.__version__, \
torch.cuda.get_device_name() if torch.cuda.is_available() else 'NO CUDA')"

echo "== CUDA tests (every test whose name says cuda; they skip without CUDA)"
timeout 240 python3 -m pytest -q -p no:cacheprovider -k cuda -rs tests 2>&1 | tee "$OUT/cuda_tests.log"

echo "== speed: the paper's linear settings, 2,000 rounds, 10 seeds on CPU and on the GPU, and 1,000 seeds on the GPU"
for args in "--device cpu --seeds 10" "--device cuda --seeds 10" "--device cuda --seeds 1000"; do
    # shellcheck disable=SC2086
    timeout 150 python3 benchmarks/linear_paper.py --rounds 2000 --agents LMCTS LinTS LinUCB --no-reference $args \
        2>&1 | tee -a "$OUT/linear_paper.log"
done

echo "== speed: env steps per second"
timeout 90 python3 benchmarks/env_throughput.py --device cuda --seconds 1 --replicas 1 1024 8192 2>&1 \
    | tee "$OUT/env_throughput.log"
