#!/usr/bin/env bash
# All the GPU checks in one run, for a machine with an NVIDIA GPU and jax[cuda] already installed
# (no virtual environment, no network needed):
#
#   benchmarks/gpu_check.sh OUTDIR
#
# 1. the environment (jax, devices, nvidia-smi);
# 2. the test suite with the GPU-aware tests (browser tests and missing tools skip cleanly);
# 3. the full report, built on the GPU (OUTDIR/report/, with results.json);
# 4. benchmarks/ceilings.py against torch (cuBLAS matmul, device copy, CUDA events).
# Every step's output and exit code land in OUTDIR; the script's own exit code is the number of
# steps that failed. Each step has a time limit so the whole run fits in about 9 minutes.
set -u
out=${1:?usage: benchmarks/gpu_check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export XLA_PYTHON_CLIENT_PREALLOCATE=false
failed=0

step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  echo "$rc" >"$out/$name.rc"
  echo "$name: exit $rc in $((SECONDS - start)) s" | tee -a "$out/summary.txt"
  [ "$rc" -eq 0 ] || [ "$name" = report -a "$rc" -eq 3 ] || failed=$((failed + 1))
  return 0
}

: >"$out/summary.txt"
step environment 60 bash -c "$py -c 'import jax, jaxlib; print(\"jax\", jax.__version__, \"backend\", jax.default_backend()); print(jax.devices()); print(jax.devices()[0].device_kind)'; nvidia-smi || true"
step tests 240 "$py" -m pytest -q -p no:cacheprovider tests
rm -rf "$out/report"
step report 300 "$py" generate.py --out "$out/report" --progress plain
step ceilings 120 "$py" benchmarks/ceilings.py
[ -f "$out/report/results.json" ] && cp "$out/report/results.json" "$out/gpu_results.json"
tail -n 1 "$out/ceilings.txt" >"$out/ceilings.json" 2>/dev/null
echo "failed steps: $failed" | tee -a "$out/summary.txt"
exit "$failed"
