# syntax=docker/dockerfile:1
# The trainer image: the Celery worker of the `gpu` queue, where the learner runs (accelerate,
# CUDA torch). Build from the repository root:
#   docker build -f docker/trainer.Dockerfile -t distrl-trainer:dev .
# Needs the NVIDIA Container Toolkit and a driver that supports CUDA 13.0 (>= 580) on the host.
FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04

ARG AIRFLOW_VERSION=3.3.2
# PyPI's Linux x86_64 wheel of torch 2.13.0 is the CUDA 13.0 build (cuda-toolkit 13.0.x,
# cuDNN 9 for cu13), matching this base image.
ARG TORCH_VERSION=2.13.0

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    AIRFLOW_HOME=/opt/airflow \
    PATH=/opt/venv/bin:${PATH}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Ubuntu 24.04's Python is 3.12 (supported by the package: >=3.11,<3.13). git is for DVC.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        ca-certificates curl git python3 python3-venv tini \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 50000 --gid 0 --create-home --home-dir /home/airflow airflow \
    && python3 -m venv /opt/venv \
    && mkdir -p /opt/airflow/dags /opt/airflow/logs /opt/distrl/runs /opt/distrl/dvc-remote \
        /opt/distrl/docker \
    && chown -R airflow:0 /opt/venv /opt/airflow /opt/distrl \
    && chmod -R g+rwX /opt/airflow /opt/distrl
USER 50000:0

# Airflow and its Celery/Postgres providers under Airflow's own constraints for this Python.
RUN PY="$(python -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')" \
    && pip install --no-cache-dir \
        "apache-airflow[celery,postgres,fab]==${AIRFLOW_VERSION}" \
        --constraint "https://raw.githubusercontent.com/apache/airflow/constraints-${AIRFLOW_VERSION}/constraints-${PY}.txt"
COPY --chown=airflow:0 pyproject.toml README.md /opt/distrl/
COPY --chown=airflow:0 distrl_tasks /opt/distrl/distrl_tasks
RUN pip install --no-cache-dir \
        "torch==${TORCH_VERSION}" \
        "apache-airflow==${AIRFLOW_VERSION}" \
        "/opt/distrl[ml,pipeline]" \
    && python -c "import torch, accelerate; assert torch.version.cuda, 'CPU-only torch'"

COPY --chown=airflow:0 params.yaml /opt/distrl/params.base.yaml
COPY --chown=airflow:0 dags /opt/airflow/dags
COPY --chown=airflow:0 --chmod=0755 docker/entrypoint.sh /opt/distrl/docker/
COPY --chown=airflow:0 docker/render_params.py /opt/distrl/docker/

ENV DISTRL_ROOT=/opt/distrl \
    DISTRL_PARAMS_BASE=/opt/distrl/params.base.yaml \
    DISTRL_PARAMS=/opt/distrl/params.yaml \
    HF_HOME=/opt/distrl/runs/hf-cache
WORKDIR /opt/distrl

# Importing Airflow takes seconds: a generous timeout, checked once a minute.
HEALTHCHECK --interval=60s --timeout=45s --start-period=120s --retries=3 \
    CMD ["/bin/bash", "-c", "celery --app airflow.providers.celery.executors.celery_executor.app inspect ping -d \"celery@${HOSTNAME}\""]

ENTRYPOINT ["/usr/bin/tini", "--", "/opt/distrl/docker/entrypoint.sh"]
CMD ["airflow", "celery", "worker", "--queues", "gpu", "--concurrency", "1"]
