# levelfield — `make demo` sets everything up and runs the demo; `make test` runs the tests.
# Both create the virtual environment on first use, so each works on a fresh machine.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Framework builds: ACCEL=cuda installs the CUDA builds of PyTorch, JAX and TensorFlow, ACCEL=cpu the
# CPU builds; with no ACCEL, an `nvidia-smi -L` that runs and lists a GPU selects cuda, anything else
# cpu. Every framework pin is in this block (docs/packaging.md, Builds per accelerator): one version per
# framework, its CPU or its CUDA build. They stay out of requirements.lock (no hash covers both builds);
# the lock was resolved with them (`make lock`), and they install constrained to its versions.
# cpu: the CPU wheel of torch lies on the project's machines; installing it by version stops pip from
# pulling PyPI's multi-GB CUDA build for `torch`.
# cuda: PyPI's torch 2.13.0 for Linux x86-64 is built for CUDA 13, so JAX takes its CUDA 13 plugin;
# TensorFlow 2.21.0 is built for CUDA 12 only. Both are the versions the CPU extras resolved to in 2026-11.
TORCH_VERSION := 2.13.0
JAX_VERSION := 0.10.2
TF_VERSION := 2.21.0
# ONNX Runtime (inference only): `onnxruntime` (CPU) or `onnxruntime-gpu` (its CUDA provider) at one version,
# the newest both builds had in 2026-11; the two share one import package, so a venv holds one of them.
ORT_VERSION := 1.31.1
# Everything else: one version each, with hashes (docs/packaging.md, The lock file).
LOCK := requirements.lock
LOCK_PINS = $(VENV)/lock-pins.txt
ACCEL_FROM := given
ifeq ($(strip $(ACCEL)),)
override ACCEL := $(shell gpus=$$(nvidia-smi -L 2>/dev/null) && echo "$$gpus" | grep -q '^GPU [0-9]' && echo cuda || echo cpu)
ACCEL_FROM := detected: $(if $(filter cuda,$(ACCEL)),nvidia-smi -L lists a GPU,no nvidia-smi -L that lists a GPU)
endif
ifneq ($(ACCEL),cpu)
ifneq ($(ACCEL),cuda)
$(error ACCEL=$(ACCEL): expected ACCEL=cuda or ACCEL=cpu, or no ACCEL to detect an NVIDIA GPU with nvidia-smi)
endif
endif
FMNIST_DIR := /usr/share/datasets/fashion-mnist
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
STAMP := $(VENV)/.levelfield-installed
DEMO_OUT ?= demo-out
# The demo's rules: 1.2, the first to name ONNX Runtime, so the demo shows four inference frameworks (docs/demo.md).
DEMO_RULES ?= 1.2

.PHONY: setup lock accel-check data browser managers demo test bench example fuzz wheels device-check clean help

help:
	@echo "make demo   set up (venv, frameworks: CUDA builds with a GPU, else CPU; extras, dataset) and run the end-to-end demo"
	@echo "           ACCEL=cuda or ACCEL=cpu picks the frameworks' builds instead of detecting a GPU"
	@echo "make test   set up if needed and run the whole test suite"
	@echo "make lock  re-resolve requirements.lock (hashed versions of every non-framework dependency) from pyproject.toml"
	@echo "make bench  set up if needed and run the benchmarks (benchmarks/results/<date>-<host>.json and .md; docs/benchmarks.md)"
	@echo "make example  regenerate submissions/example (about 15 min; quiet machine, clean checkout)"
	@echo "make fuzz   set up if needed and fuzz the checker with 10,000 damaged trees (build/fuzz/report.json; ~20 min)"
	@echo "make wheels  download what an offline GPU node lacks, as wheels for its Python (build/wheels-py3.12)"
	@echo "make device-check  every GPU path once, under a time limit (build/device-check; CPU scale without a GPU)"
	@echo "make clean  remove the virtual environment and demo output"

setup: $(STAMP) data browser

# The lock first, file by file against its hashes (--no-deps: it holds no framework, and flax needs jax);
# then the frameworks by version and levelfield, constrained to the lock's versions (LOCK_PINS: the lock
# without its hashes, which pip would otherwise demand of every framework wheel too), so neither can move
# a locked package, and `pip check` that the whole agrees.
# On CUDA, TensorFlow's CUDA 12 wheels and torch's CUDA 13 wheels both write nvidia/nccl/lib and
# nvidia/cudnn/lib; TensorFlow goes first, so PyTorch and JAX load the NCCL and cuDNN they were built for.
# The tensorflow extra (tensorflow-cpu on x86-64) stays out: it would overwrite tensorflow[and-cuda]; the
# onnxruntime extra too: its CPU wheel `onnxruntime` and `onnxruntime-gpu` (the CUDA provider) share a package
# (onnx itself comes with the lock).
$(STAMP): pyproject.toml setup.cfg $(LOCK) | accel-check
	@echo "levelfield setup: ACCEL=$(ACCEL) ($(ACCEL_FROM))"
	$(PYTHON) -m venv $(VENV) || { $(SUDO) apt-get update && $(SUDO) apt-get install -y python3-venv && $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --require-hashes --no-deps -r $(LOCK)
	sed -n 's/^\([A-Za-z0-9][A-Za-z0-9._-]*==[^ \\]*\).*/\1/p' $(LOCK) > $(LOCK_PINS)
ifeq ($(ACCEL),cuda)
	$(BIN)/python -m pip install -c $(LOCK_PINS) 'tensorflow[and-cuda]==$(TF_VERSION)'
	$(BIN)/python -m pip install -c $(LOCK_PINS) torch==$(TORCH_VERSION) 'jax[cuda13]==$(JAX_VERSION)' onnxruntime-gpu==$(ORT_VERSION)
	$(BIN)/python -m pip install -c $(LOCK_PINS) -e '.[pytorch,jax,gpu,dev]'
else
	$(BIN)/python -m pip install -c $(LOCK_PINS) torch==$(TORCH_VERSION) jax==$(JAX_VERSION) tensorflow-cpu==$(TF_VERSION) onnxruntime==$(ORT_VERSION)
	$(BIN)/python -m pip install -c $(LOCK_PINS) -e '.[all,dev]'
endif
	$(BIN)/python -m pip check
	printf 'ACCEL=%s\n(%s)\n' '$(ACCEL)' '$(ACCEL_FROM)' > $@

# Refresh requirements.lock after a change to pyproject.toml's dependencies or to the pins above (network;
# uv comes with the dev extra). tests/test_lockfile.py fails until the lock agrees again.
lock: | $(STAMP)
	$(BIN)/python -m levelfield.tools.lockfile --out $(LOCK) --force torch==$(TORCH_VERSION) jax==$(JAX_VERSION) tensorflow-cpu==$(TF_VERSION) \
		onnxruntime==$(ORT_VERSION)

# pip keeps the builds a venv holds, so a venv set up for the other ACCEL is refused, not patched.
# A stamp without ACCEL= predates the choice: such a venv holds the CPU builds of JAX and TensorFlow.
accel-check:
	@if [ -f $(STAMP) ]; then \
		held=$$(sed -n 's/^ACCEL=//p' $(STAMP)); held=$${held:-cpu}; \
		if [ "$$held" != '$(ACCEL)' ]; then \
			echo "$(VENV) holds the $$held builds, not ACCEL=$(ACCEL)'s: run make clean first, or set ACCEL=$$held" >&2; \
			exit 1; \
		fi; \
	fi

# Fashion-MNIST comes from Debian's package unless LEVELFIELD_DATA_DIR points elsewhere.
data:
	@if [ -z "$${LEVELFIELD_DATA_DIR:-}" ] && [ ! -f $(FMNIST_DIR)/train-images-idx3-ubyte.gz ]; then \
		echo "installing Fashion-MNIST (Debian package dataset-fashion-mnist)"; \
		$(SUDO) apt-get update && $(SUDO) apt-get install -y dataset-fashion-mnist; \
	fi

# Headless Chromium renders the leaderboard's HTML page in the tests (Debian package chromium).
browser:
	@command -v chromium >/dev/null 2>&1 || { echo "installing chromium (Debian package)"; \
		$(SUDO) apt-get update && $(SUDO) apt-get install -y chromium; }

# Slurm (slurmctld, slurmd, munge) and Open MPI's mpirun, for the tests that start a Slurm cluster and
# mpirun ranks (tests/test_slurm.py, tests/test_mpirun.py; Debian packages). Where apt cannot install
# them the tests skip with that reason, so a failed install does not stop `make test`.
managers:
	@command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v munged >/dev/null 2>&1 \
		&& command -v mpirun >/dev/null 2>&1 || { echo "installing Slurm, munge and Open MPI (Debian packages)"; \
		$(SUDO) apt-get update && $(SUDO) apt-get install -y slurm-wlm munge openmpi-bin \
		|| echo "could not install slurm-wlm munge openmpi-bin: the Slurm and mpirun tests will skip"; }

demo: setup
	$(BIN)/levelfield demo --out $(DEMO_OUT) --rules-version $(DEMO_RULES)

# setup installed chromium, so its absence is a failure here, not a skip.
# Two passes (docs/testing.md): the modules spread over one pytest-xdist worker per logical CPU (-n logical), each module's
# tests on one worker (--dist loadfile); then the `serial` ones, which measure this host, alone. Each pass
# fails when it collects no test (pytest's exit 5).
test: setup managers
	LEVELFIELD_REQUIRE_CHROMIUM=1 $(BIN)/python -m pytest -n logical --dist loadfile -m "not serial"
	LEVELFIELD_REQUIRE_CHROMIUM=1 $(BIN)/python -m pytest -m serial

# 25-40 minutes (docs/benchmarks.md); numbers are only meaningful on an otherwise idle machine.
bench: setup
	$(BIN)/python -m benchmarks

example: setup
	PATH=$(BIN):$$PATH bash submissions/make-example.sh

# 10,000 damaged copies of submissions/example through the checker; the figures go to docs/reliability.md.
fuzz: setup
	$(BIN)/python -m levelfield.tools.fuzz --inputs 10000 --seed 1 --out build/fuzz/report.json

# On a networked machine: the wheels an offline GPU node needs beside its preinstalled frameworks
# (tools/device_check/wheels.py); on the node: bash tools/device_check/node.sh build/wheels-py3.12 OUT.
NODE_PYTHON_VERSION ?= 3.12
wheels:
	$(PYTHON) tools/device_check/wheels.py --python-version $(NODE_PYTHON_VERSION) --out build/wheels-py$(NODE_PYTHON_VERSION)

# The device check here: GPU size when NVML finds a GPU, CPU scale otherwise (levelfield/cli/device_check/).
DEVICE_CHECK_OUT ?= build/device-check
device-check: setup
	$(BIN)/levelfield device-check --out $(DEVICE_CHECK_OUT) --force

clean:
	rm -rf $(VENV) $(DEMO_OUT) build *.egg-info
