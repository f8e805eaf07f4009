#!/usr/bin/env bash
# Entry point of the pipeline and trainer images: render the effective params.yaml from the
# baked base file and the DISTRL_SET_* overrides, then run the given command in this process
# (exec), so that signals from Docker reach Airflow directly.
set -euo pipefail

: "${DISTRL_PARAMS_BASE:?DISTRL_PARAMS_BASE (the baked params.yaml) must be set by the image}"
: "${DISTRL_PARAMS:?DISTRL_PARAMS (where the effective params.yaml goes) must be set}"

python /opt/distrl/docker/render_params.py --base "${DISTRL_PARAMS_BASE}" --out "${DISTRL_PARAMS}"

if [[ $# -eq 0 ]]; then
  echo "entrypoint: no command given (e.g. 'airflow celery worker --queues gpu')" >&2
  exit 64
fi
exec "$@"
