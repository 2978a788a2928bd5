# StepWiser companion. `make help` lists the targets.
PROFILE ?= tiny
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PROCESSBENCH ?= $(abspath $(wildcard ../shared/data/processbench))

.PHONY: help venv reproduce test test-slow lab toy-base bench check-profiles clean

help:
	@echo "make reproduce [PROFILE=smoke|tiny|colab|paper]  run every notebook headless (default: tiny)"
	@echo "make test        unit tests + every notebook at the smoke profile (what CI runs)"
	@echo "make test-slow   also the slow checks (minutes of CPU)"
	@echo "make lab         JupyterLab on notebooks/"
	@echo "make bench       labelling speed: naive vs batched vs adaptive -> results/bench/labelling.json"
	@echo "make toy-base    rebuild the committed toy base model data/toy_base (~30 min on 2 cores)"

# The environment: created once, refreshed when pyproject.toml changes. torch is installed first
# and pinned, so that pip takes the CPU wheel where one is on disk (no multi-GB CUDA download).
$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || { echo "[make] creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "[make] installing torch==2.13.0, then the project (about 1-3 minutes on a fresh machine)"
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	@touch $@

venv: $(VENV)/.installed

reproduce: venv
	$(PY) -m stepwiser_lib.runner --profile $(PROFILE)

test: venv
	STEPWISER_PROCESSBENCH_DIR=$(PROCESSBENCH) $(PY) -m pytest -m "not slow" -q

test-slow: venv
	STEPWISER_PROCESSBENCH_DIR=$(PROCESSBENCH) $(PY) -m pytest -q

check-profiles: venv
	@for p in smoke tiny colab paper; do $(PY) -m stepwiser_lib.runner --profile $$p --check >/dev/null && echo "profile $$p ok"; done

lab: venv
	$(VENV)/bin/jupyter lab notebooks/

toy-base: venv
	$(PY) -m stepwiser_lib.toybase --out data/toy_base --work-dir runs/toy_base_work --seed 0

bench: venv
	$(PY) -m stepwiser_lib.bench --profile $(if $(filter smoke,$(PROFILE)),smoke,tiny)

clean:
	rm -rf runs/smoke results/smoke figures/smoke
