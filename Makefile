# The README's two commands: `make run` and `make test`. Both set up .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.setup-stamp
PORT ?= 8501

.PHONY: setup setup-system setup-engines run test test-fast lint format bench crossval clean lock

setup: setup-system $(STAMP) setup-engines

# Debian packages (chromium, poppler-utils, the PDF's fonts): installed with apt when missing and
# run as root, else named on stderr (scripts/system-deps.sh, shared with .ci/run).
setup-system:
	@bash scripts/system-deps.sh

# The engines whose own argument parsers tests/test_engine_parsers.py runs on the generated
# commands: one venv per release (their pins clash), each the engine without its dependencies and
# what the import of its parser needs, pinned exactly in requirements-engines/<engine>-<version>.txt
# (--no-deps: the file is the whole set). torch 2.13.0 (the CPU build) and triton, ~1.75 GB that
# every engine imports at the same pins, are installed once into $(ENGINE_BASE) and put on each
# engine venv's path by a .pth file: a CI machine ran out of disk installing the second engine.
# --no-cache-dir: pip's wheel cache would hold a second copy of everything.
ENGINES := $(basename $(notdir $(wildcard requirements-engines/*.txt)))
ENGINE_STAMPS := $(ENGINES:%=.venv-engines/%/.setup-stamp)
ENGINE_BASE := .venv-engines/_base
ENGINE_PIP := --quiet --disable-pip-version-check --no-deps --no-cache-dir

setup-engines: $(ENGINE_STAMPS)

$(ENGINE_BASE)/.setup-stamp: requirements-engines/base/torch-triton.txt
	rm -rf $(ENGINE_BASE)
	$(PY) -m pip install $(ENGINE_PIP) --target $(ENGINE_BASE) -r $<
	@touch $@

.venv-engines/%/.setup-stamp: requirements-engines/%.txt $(ENGINE_BASE)/.setup-stamp
	rm -rf .venv-engines/$*
	$(PY) -m venv .venv-engines/$*
	.venv-engines/$*/bin/python -m pip install $(ENGINE_PIP) -r requirements-engines/$*.txt
	echo "$(abspath $(ENGINE_BASE))" > "$$(.venv-engines/$*/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/engine-base.pth"
	.venv-engines/$*/bin/python -c 'import torch, triton'
	@touch $@

# Re-installs only when a requirements file changes, so a second `make setup` is a no-op.
# constraints.txt pins the whole resolved set (transitive dependencies too).
$(STAMP): requirements.txt requirements-dev.txt constraints.txt
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt \
		-c constraints.txt
	@touch $(STAMP)

# Re-resolve the full set after editing requirements*.txt (in a scratch venv, from PyPI).
lock:
	rm -rf .lock-venv && $(PY) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	{ sed -n '1,4p' constraints.txt; .lock-venv/bin/pip freeze --exclude-editable; } > constraints.new
	mv constraints.new constraints.txt && rm -rf .lock-venv

# The app needs only .venv: the engine venvs (~4 min, ~3.5 GB) serve tests/test_engine_parsers.py.
run: $(STAMP)
	$(BIN)/streamlit run app.py --server.address 127.0.0.1 --server.port $(PORT) --server.headless true

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: lint
	$(BIN)/python -m pytest

# The library tests and doctests alone (about 2 minutes on an idle 2-core machine): no AppTest, no
# browser, no fuzzing suite, no test that starts a process (tiers set by tests/tiers.py; in this
# lane a test that starts a process anyway fails, naming itself). CI runs `make test`.
test-fast: setup
	IA_TEST_TIER=fast $(BIN)/python -m pytest -m "not (app or browser or fuzz or subprocess)"

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: setup
	@for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# Regenerate the out-of-sample error files (data/crossval.yaml, data/crossval_ranges.json):
# every fold refitted from scratch, ~25 minutes on 2 cores. Options after CROSSVAL_ARGS=, e.g.
# `make crossval CROSSVAL_ARGS=--percentiles` (also data/crossval_percentiles.yaml).
crossval: setup
	$(BIN)/python -m advisor crossval $(CROSSVAL_ARGS)

clean:
	rm -rf $(VENV) .venv-engines .pytest_cache .ruff_cache .hypothesis test-output
