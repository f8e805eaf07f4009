# syntax=docker/dockerfile:1
# The pipeline image: Airflow 3 (api-server, scheduler, dag-processor, triggerer, Celery workers
# for the `default` and `devices` queues) with distrl_tasks installed, CPU-only torch, and the
# MLflow server. Build from the repository root:
#   docker build -f docker/pipeline.Dockerfile -t distrl-pipeline:dev .
ARG AIRFLOW_VERSION=3.3.2
ARG PYTHON_VERSION=3.11
FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}

ARG AIRFLOW_VERSION
# The same pin as the Makefile's CPU install; the CPU index keeps GBs of CUDA wheels out.
ARG TORCH_VERSION=2.13.0
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

USER 0
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# git: DVC versions the trajectory directory in a git repository.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /opt/distrl/runs /opt/distrl/dvc-remote /opt/distrl/docker \
    && chown -R airflow:0 /opt/distrl \
    && chmod -R g+rwX /opt/distrl
USER 50000:0

# Dependencies first (the slow layer), keyed only on the package's metadata and source.
RUN pip install --no-cache-dir --index-url "${TORCH_INDEX_URL}" "torch==${TORCH_VERSION}"
COPY --chown=airflow:0 pyproject.toml README.md /opt/distrl/
COPY --chown=airflow:0 distrl_tasks /opt/distrl/distrl_tasks
RUN pip install --no-cache-dir \
        "apache-airflow==${AIRFLOW_VERSION}" \
        "torch==${TORCH_VERSION}" \
        "/opt/distrl[ml,pipeline]" \
    && python -c "import torch, distrl_tasks; assert torch.version.cuda is None, torch.__version__"

COPY --chown=airflow:0 params.yaml /opt/distrl/params.base.yaml
COPY --chown=airflow:0 dags /opt/airflow/dags
COPY --chown=airflow:0 --chmod=0755 docker/entrypoint.sh docker/airflow-init.sh /opt/distrl/docker/
COPY --chown=airflow:0 docker/render_params.py /opt/distrl/docker/

# Relative paths in params.yaml (runs/...) resolve against the project root; runs/ and
# dvc-remote/ are volumes shared by every service (see docker/compose.yaml).
ENV DISTRL_ROOT=/opt/distrl \
    DISTRL_PARAMS_BASE=/opt/distrl/params.base.yaml \
    DISTRL_PARAMS=/opt/distrl/params.yaml \
    HF_HOME=/opt/distrl/runs/hf-cache
WORKDIR /opt/distrl

# One image, several roles: each compose service declares the healthcheck of its role.
ENTRYPOINT ["/usr/bin/dumb-init", "--", "/opt/distrl/docker/entrypoint.sh", "/entrypoint"]
CMD ["version"]
