#!/usr/bin/env bash
# All the GPU checks in one run, for a machine with an NVIDIA GPU and jax[cuda] already installed
# (no virtual environment, no network needed):
#
#   benchmarks/gpu_check.sh OUTDIR
#
# 1. the environment (jax, devices, nvidia-smi);
# 2. the test suite with the GPU-aware tests (browser tests and missing tools skip cleanly);
# 3. the full report, built on the GPU (OUTDIR/report/, with results.json);
# 4. benchmarks/ceilings.py against torch (cuBLAS matmul, device copy, CUDA events);
# 5. benchmarks/kernels.py: per-kernel times from device traces of a training step;
# 6. benchmarks/prediction.py on the report's results: the model's errors on the GPU.
# Every step's output and exit code land in OUTDIR; the script's own exit code is the number of
# steps that failed. Each step has a time limit so the whole run fits in under 10 minutes.
#
# Python packages the GPU machine may lack (pydantic and its dependencies) can travel as wheels
# in .whl/ at the repository root: they are installed into a temporary folder first. To fetch
# them where pip reaches the registry (Python 3.12, x86-64):
#   python3 -m pip download --only-binary=:all: --python-version 3.12 \
#     --platform manylinux_2_17_x86_64 -d .whl pydantic
set -u
out=${1:?usage: benchmarks/gpu_check.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export XLA_PYTHON_CLIENT_PREALLOCATE=false
failed=0
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --target /tmp/roofline-site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/roofline-site"
fi

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
step tests 180 "$py" -m pytest -q -p no:cacheprovider -x tests
rm -rf "$out/report"
step report 240 "$py" generate.py --out "$out/report" --progress plain
step ceilings 90 "$py" benchmarks/ceilings.py
step kernels 45 "$py" benchmarks/kernels.py
[ -f "$out/report/results.json" ] && \
  step prediction 30 "$py" benchmarks/prediction.py --no-step --from-json "$out/report/results.json"
[ -f "$out/report/results.json" ] && cp "$out/report/results.json" "$out/gpu_results.json"
tail -n 1 "$out/ceilings.txt" >"$out/ceilings.json" 2>/dev/null
tail -n 1 "$out/kernels.txt" >"$out/kernels.json" 2>/dev/null
echo "failed steps: $failed" | tee -a "$out/summary.txt"
exit "$failed"
