# levelfield — `make demo` sets everything up and runs the demo; `make test` runs the tests.
# Both create the virtual environment on first use, so each works on a fresh machine.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU wheel of this release lies on the project's machines; installing it
# before the extras stops pip from pulling a multi-GB CUDA build for `torch`.
TORCH_VERSION := 2.13.0
FMNIST_DIR := /usr/share/datasets/fashion-mnist
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
STAMP := $(VENV)/.levelfield-installed
DEMO_OUT ?= demo-out

.PHONY: setup data browser demo test bench example fuzz wheels device-check clean help

help:
	@echo "make demo   set up (venv, torch CPU, extras, dataset) and run the end-to-end demo"
	@echo "make test   set up if needed and run the whole test suite"
	@echo "make bench  set up if needed and run the benchmarks (benchmarks/results/<date>-<host>.json and .md; docs/benchmarks.md)"
	@echo "make example  regenerate submissions/example (about 15 min; quiet machine, clean checkout)"
	@echo "make fuzz   set up if needed and fuzz the checker with 10,000 damaged trees (build/fuzz/report.json; ~20 min)"
	@echo "make wheels  download what an offline GPU node lacks, as wheels for its Python (build/wheels-py3.12)"
	@echo "make device-check  every GPU path once, under a time limit (build/device-check; CPU scale without a GPU)"
	@echo "make clean  remove the virtual environment and demo output"

setup: $(STAMP) data browser

$(STAMP): pyproject.toml setup.cfg
	$(PYTHON) -m venv $(VENV) || { $(SUDO) apt-get update && $(SUDO) apt-get install -y python3-venv && $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install torch==$(TORCH_VERSION)
	$(BIN)/python -m pip install -e '.[all,dev]'
	touch $@

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

demo: setup
	$(BIN)/levelfield demo --out $(DEMO_OUT)

# setup installed chromium, so its absence is a failure here, not a skip.
test: setup
	LEVELFIELD_REQUIRE_CHROMIUM=1 $(BIN)/python -m pytest

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

# The device check here: GPU size when NVML finds a GPU, CPU scale otherwise (tools/device_check/).
DEVICE_CHECK_OUT ?= build/device-check
device-check: setup
	$(BIN)/python -m levelfield.tools.device_check --out $(DEVICE_CHECK_OUT) --force

clean:
	rm -rf $(VENV) $(DEMO_OUT) build *.egg-info
