#!/usr/bin/env bash
# Runs once, when the Postgres data volume is first initialised (docker-entrypoint-initdb.d):
# creates the MLflow backend store as its own role and database, separate from Airflow's.
# The password arrives through the environment (from docker/.env), never from this file.
set -euo pipefail

if [[ -z "${MLFLOW_DB_PASSWORD:-}" ]]; then
  echo "init-mlflow: MLFLOW_DB_PASSWORD is not set (see docker/.env.example)" >&2
  exit 1
fi

psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER}" --dbname "${POSTGRES_DB}" \
  -v mlflow_password="${MLFLOW_DB_PASSWORD}" <<'SQL'
CREATE ROLE mlflow LOGIN PASSWORD :'mlflow_password';
CREATE DATABASE mlflow OWNER mlflow;
SQL
