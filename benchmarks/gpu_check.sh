#!/usr/bin/env bash
# All the GPU checks in one run, for a machine with an NVIDIA GPU and jax[cuda] already installed
# (no virtual environment, no network needed):
#
#   benchmarks/gpu_check.sh OUTDIR [SECONDS]
#
# 1. environment: jax, its devices, nvidia-smi;
# 2. capture: a real device trace of the shipped training step (benchmarks/capture_gpu_trace.py),
#    read back by `profile` with the roofs of the device the trace names;
# 3. prediction: benchmarks/prediction.py (PREDICTION_ARGS, default `--suite catalog --no-step`):
#    ceilings measured on this GPU, the catalog measured and scored, the report kept;
# 4. profile_ceilings: the captured trace read again with the ceilings measured in step 3;
# 5. tests: the whole test suite on the GPU (pytest-xdist where installed), each test named as
#    it ends, so that a run cut short still names its failures;
# 6. ceilings: benchmarks/ceilings.py --quick against torch (cuBLAS matmul, device copy, CUDA
#    events), in the time left.
# The run keeps within SECONDS (default 540): each step's limit is cut to what is left, and a step
# with under 20 s left is skipped. Every step's output and exit code land in OUTDIR, with the
# trace, results.json files and a tarball of the logs; the exit code is the number of steps that
# failed or were skipped. Measured on an H200 (16 cores): capture 13 s, the catalog's prediction
# about 150 s, the test suite over 150 s with 14 workers; `--suite both` did not end in 240 s.
#
# Python packages the GPU machine may lack (pydantic and its dependencies, a recent protobuf) can
# travel as wheels in .whl/ at the repository root: they are installed into a temporary folder
# that comes first on the path. To fetch them where pip reaches the registry (Python 3.12):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux2014_x86_64 -d .whl \
#     pydantic pydantic_core annotated-types typing-inspection protobuf
set -u
out=${1:?usage: benchmarks/gpu_check.sh OUTDIR [SECONDS]}
budget=${2:-540}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
failed=0
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/roofline-site .whl/*.whl \
    && export PYTHONPATH="/tmp/roofline-site:$PYTHONPATH"
fi

step() {  # step NAME SECONDS COMMAND...: runs within min(SECONDS, what is left of the budget)
  local name=$1 limit=$2
  shift 2
  local left=$((budget - SECONDS - 15))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 20 ]; then
    echo "$name: skipped, ${left} s left" | tee -a "$out/summary.txt"
    failed=$((failed + 1))
    return 0
  fi
  local start=$SECONDS
  timeout "$limit" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  echo "$rc" >"$out/$name.rc"
  echo "$name: exit $rc in $((SECONDS - start)) s (limit $limit s)" | tee -a "$out/summary.txt"
  # profile and generate exit 3 when the report is written with something not available
  [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || failed=$((failed + 1))
  return 0
}

: >"$out/summary.txt"
step environment 60 bash -c "$py -c 'import jax, jaxlib, google.protobuf, pydantic; print(\"jax\", jax.__version__, \"backend\", jax.default_backend(), \"protobuf\", google.protobuf.__version__, \"pydantic\", pydantic.__version__); print(jax.devices()); print(jax.devices()[0].device_kind)'; nvidia-smi || true; nproc"
rm -rf "$out/trace" "$out/profile" "$out/prediction" "$out/profile_ceilings"
step capture 150 "$py" benchmarks/capture_gpu_trace.py --logdir "$out/trace" --out "$out/profile" --steps 5
# shellcheck disable=SC2086  # PREDICTION_ARGS is a list of arguments
step prediction 240 "$py" benchmarks/prediction.py ${PREDICTION_ARGS:---suite catalog --no-step} \
  --out "$out/prediction"
if [ -f "$out/prediction/results.json" ] && [ -d "$out/trace" ]; then
  step profile_ceilings 60 "$py" -m roofline_report profile "$out/trace" \
    --ceilings "$out/prediction/results.json" --out "$out/profile_ceilings"
fi
par=()
"$py" -c 'import xdist' 2>/dev/null && par+=(-n 14)
"$py" -c 'import pytest_timeout' 2>/dev/null && par+=(--timeout 150)
step tests 200 "$py" -m pytest -v --tb=line -rfE -p no:cacheprovider "${par[@]}" --maxfail=80 tests
pkill -f "pytest" 2>/dev/null  # xdist's workers outlive a pytest stopped at its limit
step ceilings 120 "$py" benchmarks/ceilings.py --quick --rounds 3

tail -n 1 "$out/ceilings.txt" >"$out/ceilings.json" 2>/dev/null
for d in prediction profile profile_ceilings; do
  [ -f "$out/$d/results.json" ] && gzip -c "$out/$d/results.json" >"$out/${d}_results.json.gz"
done
[ -d "$out/trace" ] && tar -czf "$out/trace.tar.gz" -C "$out" trace
tar -czf "$out/logs.tar.gz" -C "$out" --exclude='*.gz' --exclude=trace --exclude=prediction \
  --exclude=profile --exclude=profile_ceilings .
echo "failed steps: $failed" | tee -a "$out/summary.txt"
exit "$failed"
