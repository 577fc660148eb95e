#!/usr/bin/env bash
# Runs of the held-out suite on a TPU, in parts that share one ceilings cache, for a machine
# whose commands are cut at ten minutes (the whole suite with its ceilings takes longer there):
#
#   benchmarks/tpu_heldout.sh OUTDIR SECONDS RUN:K/N [RUN:K/N ...]
#
# Each RUN:K/N measures the K-th of N parts of benchmarks/heldout/heldout.toml (the part's
# config written by benchmarks/prediction.py's part_config) with
#   generate.py --config PART --only-config --quick --no-sharding --no-experiments
# into OUTDIR/RUN_pK.json.gz (its results.json) and OUTDIR/RUN_pK.log. The first part measured
# on a fresh machine measures the quick ceilings and saves them in the cache
# (ROOFLINE_REPORT_CACHE, default /tmp/rr-ceilings); the later parts, and the later runs,
# reuse them. A cache carried from an earlier call (.tpu-carry/ceilings.tar.gz at the
# repository root, named in the call's carry) is unpacked first when the cache is empty, and
# the cache is packed into OUTDIR/ceilings.tar.gz at the end, so that a later call on a fresh
# machine predicts from the same ceilings. A part is started only while at least 120 s of
# SECONDS are left, and is cut at what is left. Score the parts of one run together, once
# unpacked (gunzip -k OUTDIR/*.json.gz: the scorer reads JSON text), with
#   python benchmarks/prediction.py --suite heldout --from-json OUTDIR/1_p1.json OUTDIR/1_p2.json
# The exit code is the number of parts that failed or were skipped.
set -u
out=${1:?usage: benchmarks/tpu_heldout.sh OUTDIR SECONDS RUN:K/N ...}
budget=${2:?usage: benchmarks/tpu_heldout.sh OUTDIR SECONDS RUN:K/N ...}
shift 2
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
# shellcheck source=benchmarks/tpu_env.sh
. benchmarks/tpu_env.sh
export ROOFLINE_REPORT_CACHE=${ROOFLINE_REPORT_CACHE:-/tmp/rr-ceilings}
mkdir -p "$ROOFLINE_REPORT_CACHE"
chmod 700 "$ROOFLINE_REPORT_CACHE"
if [ -z "$(ls -A "$ROOFLINE_REPORT_CACHE")" ] && [ -f .tpu-carry/ceilings.tar.gz ]; then
  tar -xzf .tpu-carry/ceilings.tar.gz -C "$ROOFLINE_REPORT_CACHE" && echo "ceilings: carried cache unpacked"
fi
failed=0
for spec in "$@"; do
  run=${spec%%:*}
  part=${spec#*:}
  k=${part%%/*}
  left=$((budget - SECONDS - 10))
  if [ "$left" -lt 120 ]; then
    echo "$spec: skipped, $left s left" | tee -a "$out/summary.txt"
    failed=$((failed + 1))
    continue
  fi
  config=/tmp/heldout_${run}_${k}.toml
  "$py" -c "import sys; sys.path.insert(0, 'benchmarks'); from prediction import part_config; \
open('$config', 'w').write(part_config(${part%%/*}, ${part#*/}))"
  start=$SECONDS
  timeout "$left" "$py" generate.py --config "$config" --only-config --quick --no-sharding \
    --no-experiments --progress plain --out "/tmp/rr-$run-$k" >"$out/${run}_p$k.log" 2>&1
  rc=$?
  echo "$spec: exit $rc in $((SECONDS - start)) s" | tee -a "$out/summary.txt"
  tail -n 2 "$out/${run}_p$k.log"
  if [ -f "/tmp/rr-$run-$k/results.json" ]; then
    gzip -c "/tmp/rr-$run-$k/results.json" >"$out/${run}_p$k.json.gz"
  fi
  [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || failed=$((failed + 1))
done
tar -czf "$out/ceilings.tar.gz" -C "$ROOFLINE_REPORT_CACHE" .
echo "failed parts: $failed" | tee -a "$out/summary.txt"
exit "$failed"
