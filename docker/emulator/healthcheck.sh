#!/usr/bin/env bash
# Healthy when every one of the EMULATOR_COUNT emulators reports sys.boot_completed=1 over adb.
set -euo pipefail

count="${EMULATOR_COUNT:-1}"
for ((i = 0; i < count; i++)); do
  serial="emulator-$((5554 + 2 * i))"
  booted="$(timeout 15 adb -s "${serial}" shell getprop sys.boot_completed 2>/dev/null | tr -d '\r' || true)"
  if [[ "${booted}" != 1 ]]; then
    echo "${serial}: not booted (sys.boot_completed='${booted}')" >&2
    exit 1
  fi
done
echo "${count} emulator(s) booted"
