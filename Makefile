# The two commands a newcomer needs: `make demo` and `make test`. Both install what they use,
# idempotently, into .venv in the repository root, and reuse it when it is already there.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck unit install bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Reinstall only when the project's dependencies change.
# PYTHONWARNINGS silences setuptools' generic notice about editable installs (not about us).
$(STAMP): pyproject.toml | $(PY)
	PYTHONWARNINGS=ignore $(PY) -m pip install --quiet -e '.[dev]'
	touch $@

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/gatehouse chat --workspace examples/demo-workspace \
		--backend scripted --script examples/demo-script.json \
		"Which Python files are in this project, and how many lines does each have?"

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP)
	$(VENV)/bin/pytest -q

test: lint typecheck unit

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
