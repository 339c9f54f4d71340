# The two commands a fresh machine needs: `make train` (main job) and `make test` (whole suite).
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
STAMP  := $(VENV)/.setup-stamp
# pytest processes (pytest-xdist): each takes whole test files, so a module's shared fixtures stay shared
TEST_WORKERS ?= 2
PLUGINS := $(sort $(dir $(wildcard plugins/*/pyproject.toml)))

.PHONY: setup train test test-fast test-container test-tank-cuda lint clean

setup: $(STAMP)

# Re-run when the pins, any project metadata or a plugin's C source change; otherwise a no-op.
$(STAMP): tank/constraints.txt tank/constraints-cuda.txt tank/install.sh pyproject.toml $(wildcard plugins/*/pyproject.toml plugins/*/setup.py plugins/*/*/*.c plugins/*/*/c/*.h)
	PYTHON=$(PYTHON) VENV=$(VENV) bash tank/install.sh
	touch $(STAMP)

train: setup
	$(VENV)/bin/pufferbox train cartpole

test: setup lint
	site=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir "$$site"; status=$$?; rm -rf "$$site"; exit $$status
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25

# Lint and formatting (ruff), types of the whole package (mypy) and the import layers (import-linter).
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

test-fast: setup
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not slow and not container"

# The tank: build the image with podman and train inside it (root; see ci/container-test.sh).
test-container:
	bash ci/container-test.sh

# The CUDA tank: nvcc, PyCUDA and CUDA torch inside, no GPU needed (root; see ci/tank-cuda-test.sh).
test-tank-cuda:
	bash ci/tank-cuda-test.sh

clean:
	rm -rf $(VENV) runs .pytest_cache
