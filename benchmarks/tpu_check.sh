#!/usr/bin/env bash
# All the TPU checks in one run, for a machine with a TPU and jax installed (no network needed):
#
#   benchmarks/tpu_check.sh OUTDIR [SECONDS] [STEPS]
#
# Steps, in this order (STEPS, comma-separated, picks some; default all):
# 1. environment: the project's dependencies installed (benchmarks/tpu_env.sh: wheels carried in
#    .whl-tpu/, matplotlib, flax and optax from the machine's own index), jax, its devices;
# 2. build: the default build, `python generate.py` (the catalog at its accelerator sizes, the
#    experiments, the ceilings measured or reused from ROOFLINE_REPORT_CACHE), at most
#    BUILD_SECONDS (default 540: on a TPU v5e the full ceilings alone take about 300 s, so a
#    build that measures them is a call of its own); its report and results.json kept;
# 3. capture: a plain `jax.profiler.trace` of five steps of the shipped training step
#    (benchmarks/capture_gpu_trace.py, which runs on any backend), read back by `profile`;
# 4. profile_read: that trace read by `profile` in a fresh process, timed: reading a trace
#    must not start the TPU runtime (a process that opens the chip spends tens of seconds);
# 5. prediction: benchmarks/prediction.py (PREDICTION_ARGS, default `--suite heldout`; at most
#    PREDICTION_SECONDS, default 420):
#    ceilings measured on this TPU, the held-out programs at their accelerator sizes measured,
#    traced and scored; the report and results.json kept. The whole suite with its ceilings
#    takes over 600 s on a TPU v5e: run it in parts, each a call of its own sharing one
#    ceilings cache, e.g. PREDICTION_ARGS="--suite heldout --part 1/2 --cached-ceilings" with
#    ROOFLINE_REPORT_CACHE=/tmp/rr-ceilings, then --part 2/2, and score the two
#    results.json together (prediction.py --suite heldout --from-json A B);
# 6. profile_ceilings: the captured trace read again with the ceilings measured in step 5
#    (or, without that step, in step 2);
# 7. tests: the test suite on the TPU backend (one process: one program at a time may hold
#    the chip), each test named as it ends and each failure's reason printed at once
#    (benchmarks/early_failures.py), so that a run cut short still says why (at most
#    TESTS_SECONDS, default 400; TEST_ARGS, default `tests`, or TEST_PART=K/N, every N-th test
#    collected from the K-th; PYTEST_ADDOPTS='-m "not slow"' leaves the slow tests to calls
#    of their own).
# Each TPU process spends about a minute starting the chip's runtime, so not every step fits
# one ten-minute call: a whole check is several calls sharing ROOFLINE_REPORT_CACHE, e.g.
# `environment,build`, then `capture,profile_read,profile_ceilings`, then `tests` with
# PYTEST_ADDOPTS='-m "not slow"' (about 260 s on a v5e), then the slow tests in three
# calls (PYTEST_ADDOPTS='-m slow' with TEST_PART=1/3, 2/3, 3/3: over 520 s in all), and the
# held-out runs with benchmarks/tpu_heldout.sh.
# The run keeps within SECONDS (default 560): each step's limit is cut to what is left, and a
# step with under 20 s left is skipped. Every step's output and exit code land in OUTDIR with
# the trace, the results.json files and a tarball of the logs (check.tar.gz, the one file to
# fetch); the exit code is the number of steps that failed or were skipped.
#
# The wheels for .whl-tpu/ (Python 3.11, x86-64), fetched where pip reaches the registry:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.11 \
#     --implementation cp --platform manylinux2014_x86_64 -d .whl-tpu pydantic \
#     pydantic_core annotated-types typing-inspection typing_extensions jinja2 markupsafe \
#     "protobuf>=5.26,<7" equinox jaxtyping wadler-lindig absl-py cmarkgfm cffi pycparser
# (pydantic_core at the version pydantic names).
set -u
out=${1:?usage: benchmarks/tpu_check.sh OUTDIR [SECONDS] [STEPS]}
budget=${2:-560}
only=${3:-environment,build,capture,profile_read,prediction,profile_ceilings,tests}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
# shellcheck source=benchmarks/tpu_env.sh
. benchmarks/tpu_env.sh
failed=0

wanted() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

step() {  # step NAME SECONDS COMMAND...: runs within min(SECONDS, what is left of the budget)
  local name=$1 limit=$2
  shift 2
  wanted "$name" || return 0
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
step environment 60 bash -c "$py -c 'import jax, jaxlib, google.protobuf, pydantic, matplotlib; print(\"jax\", jax.__version__, \"backend\", jax.default_backend(), \"protobuf\", google.protobuf.__version__, \"pydantic\", pydantic.__version__); print(jax.devices()); print(jax.devices()[0].device_kind)'; $py -c 'import flax, optax; print(\"flax\", flax.__version__, \"optax\", optax.__version__)'; nproc"
rm -rf "$out/build" "$out/trace" "$out/profile" "$out/profile_read_out" "$out/prediction" \
  "$out/profile_ceilings"
step build "${BUILD_SECONDS:-540}" "$py" generate.py --out "$out/build" --progress plain
step capture 120 "$py" benchmarks/capture_gpu_trace.py --logdir "$out/trace" --out "$out/profile" --steps 5
if [ -d "$out/trace" ]; then
  step profile_read 90 bash -c "start=\$(date +%s%N); $py -m roofline_report profile '$out/trace' --out '$out/profile_read_out' --progress none; rc=\$?; echo \"read in \$(( (\$(date +%s%N) - start) / 1000000 )) ms\"; [ \$rc -eq 0 ] || [ \$rc -eq 3 ]"
fi
# shellcheck disable=SC2086  # PREDICTION_ARGS is a list of arguments
step prediction "${PREDICTION_SECONDS:-420}" "$py" benchmarks/prediction.py ${PREDICTION_ARGS:---suite heldout} \
  --out "$out/prediction"
measured=$out/prediction/results.json
[ -f "$measured" ] || measured=$out/build/results.json
if [ -f "$measured" ] && [ -d "$out/trace" ]; then
  step profile_ceilings 60 "$py" -m roofline_report profile "$out/trace" \
    --ceilings "$measured" --out "$out/profile_ceilings"
fi
par=()
"$py" -c 'import pytest_timeout' 2>/dev/null && par+=(--timeout 120)
# TEST_PART=K/N: every N-th of the tests collected (PYTEST_ADDOPTS applies), from the K-th,
# read by pytest from a file (@file), for suites longer than one call
if [ -n "${TEST_PART:-}" ]; then
  k=${TEST_PART%%/*} n=${TEST_PART#*/}
  "$py" -m pytest --collect-only -q -p no:cacheprovider tests 2>/dev/null | grep '::' \
    | awk -v k="$k" -v n="$n" 'NR % n == k % n' >"$out/test_ids.txt"
  echo "tests: part $TEST_PART, $(wc -l <"$out/test_ids.txt") tests" | tee -a "$out/summary.txt"
  TEST_ARGS="@$out/test_ids.txt"
fi
# shellcheck disable=SC2086  # TEST_ARGS is a list of arguments
step tests "${TESTS_SECONDS:-400}" "$py" -m pytest -v --tb=short -rfE -p no:cacheprovider -p benchmarks.early_failures "${par[@]}" --maxfail=80 ${TEST_ARGS:-tests}

for d in build prediction profile profile_ceilings; do
  [ -f "$out/$d/results.json" ] && gzip -c "$out/$d/results.json" >"$out/${d}_results.json.gz"
done
for d in build prediction profile_ceilings; do
  [ -f "$out/$d/report.md" ] && cp "$out/$d/report.md" "$out/${d}_report.md"
done
echo "failed steps: $failed" | tee -a "$out/summary.txt"
# written in a temporary folder, then moved in: an archive growing inside the folder it reads
# makes tar warn that the folder changed, and the folder's parent may not be writable (a
# machine's output folder under a home the command cannot write to)
# (anchored: the trace's own plugins/profile folder is kept)
archive=$(mktemp -d "${TMPDIR:-/tmp}/tpu-check.XXXXXX")/check.tar.gz
tar -czf "$archive" -C "$out" --anchored --exclude=./check.tar.gz --exclude=./build \
  --exclude=./prediction --exclude=./profile --exclude=./profile_ceilings \
  --exclude=./profile_read_out . \
  && mv "$archive" "$out/check.tar.gz"
exit "$failed"
