# Every command the README names lives here. Targets are idempotent: re-running skips finished work.
PY      ?= python3
VENV    ?= .venv
BIN     := $(VENV)/bin
# The CPU build of torch, pinned: any other spec pulls GBs of CUDA packages.
TORCH   := torch==2.13.0
PYTEST_ARGS ?= --durations=20  # the slowest tests, printed after every run

.PHONY: install install-dev system-deps demo repro repro-pretrain notebook airflow cluster cluster-down cluster-status test lint format bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q "$(TORCH)"
	$(BIN)/pip install -q "$(TORCH)" -e ".[ml,pipeline,cluster]"
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(BIN)/pip install -q "$(TORCH)" -e ".[ml,pipeline,cluster,dev]"
	touch $@

## install: the package and its runtime dependencies into .venv (CPU torch pinned)
install: $(VENV)/.installed

## install-dev: install + test and lint tools + the system tools the tests drive (Debian's adb)
install-dev: $(VENV)/.installed-dev system-deps

## system-deps: Debian packages the tests drive (the real `adb` client, headless Chromium, git,
## Postgres and Redis for `distrl cluster`); apt's downloaded .deb files are dropped once installed
## (on a fresh CI machine its cache held GBs the tests' scratch needs)
system-deps:
	@missing=""; \
	for cmd in adb chromium git redis-server; do command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$cmd"; done; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing (needs root or sudo)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null && \
	  $$SUDO apt-get clean; \
	fi

## demo: the main job on the embedded default (simulator farm, scripted expert)
demo: install
	$(BIN)/distrl demo

## repro: one round as a DVC pipeline (dvc.yaml), with the virtualenv on PATH for its stages
repro: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc repro

## repro-pretrain: rebuild the base policy through DVC (pretrain/dvc.yaml; about 50 minutes, resumable)
repro-pretrain: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/dvc repro pretrain/dvc.yaml

## notebook: install Jupyter (the `notebook` extra) and open notebooks/ (DISTRL_WORKDIR=run dir)
notebook: install
	$(BIN)/pip install -q "$(TORCH)" -e ".[ml,pipeline,cluster,notebook]"
	$(BIN)/jupyter lab notebooks/

## airflow: the Airflow UI on this machine (127.0.0.1:8080, user admin, password file printed)
airflow: install
	$(BIN)/distrl airflow

## cluster: Postgres, Redis, MLflow server, Airflow and two Celery workers on loopback
cluster: install system-deps
	$(BIN)/distrl cluster up

cluster-status: install
	$(BIN)/distrl cluster status

cluster-down: install
	$(BIN)/distrl cluster down

## test: the whole test suite (what CI runs)
test: install-dev
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install-dev
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/lint-imports

format: install-dev
	$(BIN)/ruff check --fix . && $(BIN)/ruff format .

## docs: regenerate docs/config.md from the config's field comments (a unit test checks it)
.PHONY: docs
docs: install
	$(BIN)/python -m distrl_tasks.config.reference > docs/config.md

## bench: the simulator throughput benchmark (prints its figures)
bench: install
	$(BIN)/python benchmarks/sim_throughput.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
