#!/usr/bin/env bash
# Starts EMULATOR_COUNT headless instances of the baked AVD, each reset-able from a clean
# snapshot, behind an adb server on 127.0.0.1:5037 of this container.
#
# The snapshot cannot be made at image build time (docker build has no /dev/kvm), so the first
# start cold-boots the AVD once, turns animations off, saves snapshot SNAPSHOT_NAME and shuts
# down; the AVD directory is a volume, so later starts skip this. Every serving instance then
# runs -read-only (several instances may share one AVD) with -no-snapshot-save, so an episode
# never overwrites the clean state; workers reset with `avd snapshot load` over the console.
#
# adb and the consoles listen on loopback only: the devices worker joins this container's network
# namespace (network_mode: service:emulator) instead of exposing an unauthenticated adb server.
set -euo pipefail

AVD_NAME="${AVD_NAME:-distrl}"
SNAPSHOT_NAME="${SNAPSHOT_NAME:-clean}"
EMULATOR_COUNT="${EMULATOR_COUNT:-1}"
BOOT_TIMEOUT_S="${BOOT_TIMEOUT_S:-900}"
EMULATOR_GPU="${EMULATOR_GPU:-swiftshader_indirect}"
read -r -a EXTRA_ARGS <<<"${EMULATOR_EXTRA_ARGS:-}"
FIRST_PORT=5554

log() { echo "emulator-entrypoint: $*" >&2; }
die() { log "error: $*"; exit 1; }

if ! [[ "${EMULATOR_COUNT}" =~ ^[1-9][0-9]*$ ]] || ((EMULATOR_COUNT > 16)); then
  die "EMULATOR_COUNT must be an integer in 1..16, got '${EMULATOR_COUNT}'"
fi
[[ "${BOOT_TIMEOUT_S}" =~ ^[1-9][0-9]*$ ]] \
  || die "BOOT_TIMEOUT_S must be a positive integer, got '${BOOT_TIMEOUT_S}'"
[[ -e /dev/kvm ]] || die "/dev/kvm is missing: run with --device /dev/kvm on a host with KVM \
(without it the x86_64 emulator is too slow to use; the simulator farm needs no KVM)"
[[ -r /dev/kvm && -w /dev/kvm ]] || die "/dev/kvm is not read/writable by uid $(id -u): set \
KVM_GID in docker/.env to the host's kvm group id (getent group kvm | cut -d: -f3)"
[[ -d "${ANDROID_AVD_HOME}/${AVD_NAME}.avd" ]] || die "no AVD '${AVD_NAME}' in ${ANDROID_AVD_HOME}"

# An empty token file turns console authentication off; the console is reachable only from
# this network namespace, and the worker needs it for snapshot loads.
: >"${HOME}/.emulator_console_auth_token"
# Start adb first: it creates ~/.android/adbkey, whose public half the emulator installs in
# the guest, so the devices come up authorized instead of "unauthorized".
adb start-server

pids=()
stop_all() {
  log "stopping ${#pids[@]} emulator(s)"
  for pid in "${pids[@]}"; do kill -TERM "${pid}" 2>/dev/null || true; done
  wait || true
}
trap 'stop_all; exit 143' TERM INT

wait_boot() {  # serial
  local serial="$1" waited=0
  timeout "${BOOT_TIMEOUT_S}" adb -s "${serial}" wait-for-device \
    || die "${serial} did not appear on adb within ${BOOT_TIMEOUT_S}s"
  until [[ "$(adb -s "${serial}" shell getprop sys.boot_completed 2>/dev/null | tr -d '\r')" == 1 ]]; do
    ((waited += 2))
    ((waited <= BOOT_TIMEOUT_S)) || die "${serial} did not boot within ${BOOT_TIMEOUT_S}s"
    sleep 2
  done
  log "${serial} booted"
}

common=(-avd "${AVD_NAME}" -no-window -no-audio -no-boot-anim -gpu "${EMULATOR_GPU}" "${EXTRA_ARGS[@]}")
snapshot_dir="${ANDROID_AVD_HOME}/${AVD_NAME}.avd/snapshots/${SNAPSHOT_NAME}"

if [[ ! -d "${snapshot_dir}" ]]; then
  log "no snapshot '${SNAPSHOT_NAME}' yet: cold boot to create it (once per volume)"
  emulator "${common[@]}" -port "${FIRST_PORT}" -no-snapshot-load &
  pids=($!)
  serial="emulator-${FIRST_PORT}"
  wait_boot "${serial}"
  for setting in window_animation_scale transition_animation_scale animator_duration_scale; do
    adb -s "${serial}" shell settings put global "${setting}" 0
  done
  adb -s "${serial}" emu avd snapshot save "${SNAPSHOT_NAME}"
  adb -s "${serial}" emu kill
  wait "${pids[0]}" || true
  pids=()
  [[ -d "${snapshot_dir}" ]] || die "snapshot '${SNAPSHOT_NAME}' was not written"
fi

for ((i = 0; i < EMULATOR_COUNT; i++)); do
  port=$((FIRST_PORT + 2 * i))
  emulator "${common[@]}" -port "${port}" -read-only -snapshot "${SNAPSHOT_NAME}" \
    -no-snapshot-save &
  pids+=($!)
done
for ((i = 0; i < EMULATOR_COUNT; i++)); do
  wait_boot "emulator-$((FIRST_PORT + 2 * i))"
done
log "${EMULATOR_COUNT} emulator(s) ready on adb 127.0.0.1:5037"

# One instance exiting means a lost device: stop the rest and let Docker's restart policy
# bring the whole set back from the snapshot.
set +e
wait -n "${pids[@]}"
status=$?
log "an emulator exited with status ${status}"
stop_all
exit $((status == 0 ? 1 : status))
