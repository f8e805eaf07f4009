#!/usr/bin/env bash
# One-shot initialisation of the Airflow deployment (the airflow-init service): checks that the
# secrets arrived from docker/.env, migrates the metadata database, creates the admin user
# (Airflow's own entrypoint does both, driven by _AIRFLOW_DB_MIGRATE / _AIRFLOW_WWW_USER_CREATE)
# and creates the `devices` pool that caps how many collection tasks drive devices at once.
set -euo pipefail

missing=()
for var in AIRFLOW__DATABASE__SQL_ALCHEMY_CONN AIRFLOW__CORE__FERNET_KEY \
  AIRFLOW__API_AUTH__JWT_SECRET _AIRFLOW_WWW_USER_USERNAME _AIRFLOW_WWW_USER_PASSWORD; do
  if [[ -z "${!var:-}" ]]; then
    missing+=("${var}")
  fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "airflow-init: not set: ${missing[*]} (copy docker/.env.example to docker/.env and fill it)" >&2
  exit 1
fi

slots="${DEVICES_POOL_SLOTS:-4}"
if ! [[ "${slots}" =~ ^[1-9][0-9]*$ ]]; then
  echo "airflow-init: DEVICES_POOL_SLOTS must be a positive integer, got '${slots}'" >&2
  exit 1
fi

# /entrypoint migrates the database and creates the user before running the command.
exec /entrypoint bash -c \
  "airflow pools set devices ${slots} 'Android device shards: one slot per collect task' && airflow version"
