# Source this on a TPU machine that has jax but not the project's other dependencies:
#
#   . benchmarks/tpu_env.sh
#
# Wheels in .whl-tpu/ at the repository root (pydantic and its parts, jinja2, protobuf, absl-py,
# equinox; fetched where pip reaches the registry, see benchmarks/tpu_check.sh) are installed
# into /tmp/roofline-wheels; matplotlib, flax and optax come from the machine's own package
# index (/opt/pypi/simple) into /tmp/roofline-index, when it has one. Both folders go at the
# end of PYTHONPATH, so that the machine's own jax stays first. The repository goes first.
_rr_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ls "$_rr_root"/.whl-tpu/*.whl >/dev/null 2>&1; then
  PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-index --no-deps \
    --no-compile --no-cache-dir --upgrade --target /tmp/roofline-wheels "$_rr_root"/.whl-tpu/*.whl \
    || echo "tpu_env: the carried wheels did not install" >&2
fi
if [ -d /opt/pypi/simple ] && [ ! -e /tmp/roofline-index/.done ]; then
  for _rr_pkg in matplotlib flax optax; do
    PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --only-binary=:all: \
      --no-compile --index-url file:///opt/pypi/simple --target /tmp/roofline-index "$_rr_pkg" \
      >/dev/null 2>&1 || echo "tpu_env: $_rr_pkg is not in the machine's index" >&2
  done
  touch /tmp/roofline-index/.done 2>/dev/null
fi
export PYTHONPATH="$_rr_root${PYTHONPATH:+:$PYTHONPATH}:/tmp/roofline-wheels:/tmp/roofline-index"
export PYTHONUNBUFFERED=1
unset _rr_root _rr_pkg
