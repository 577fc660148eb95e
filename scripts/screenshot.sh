#!/usr/bin/env bash
# Render a report page to PNG with headless Chromium: scripts/screenshot.sh REPORT.html OUT.png [WIDTH] [dark]
set -euo pipefail
page=$(realpath "$1"); out=$(realpath -m "$2"); width=${3:-1280}; scheme=${4:-light}
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --hide-scrollbars --user-data-dir="$profile" --window-size="$width,${HEIGHT:-16000}"
       --screenshot="$out")
[ "$scheme" = dark ] && flags+=(--force-dark-mode --blink-settings=preferredColorScheme=0)
chromium "${flags[@]}" "file://$page" >/dev/null 2>&1
echo "$out"
