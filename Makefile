# attnlab: the two commands a newcomer needs are `make lab` and `make test`.
# Both build the pinned course environment in .venv first (`make env`).

PYTHON ?= python3
# Another Python gets an environment of its own: `make test PYTHON=python3.13` builds
# .venv-3.13 and leaves .venv alone.
VENV   ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-$(patsubst python%,%,$(notdir $(PYTHON))))
PORT   ?= 8888
BIN    := $(VENV)/bin
EXTRAS ?= lab,test,grading,browser,binder
STAMP  := $(VENV)/.attnlab-env-$(EXTRAS)
# pyenv installs several Pythons but puts only one on PATH; when the command itself
# does not run, take the newest matching interpreter from pyenv's versions.
PYTHON_EXE := $(shell $(PYTHON) -c 'import sys; print(sys.executable)' 2>/dev/null || \
  ls -d $$(pyenv root 2>/dev/null)/versions/*/bin/$(PYTHON) 2>/dev/null | sort -V | tail -n 1)
PYTEST := $(BIN)/python -m pytest
# Jupyter refuses to run as root unless told; CI and containers run as root.
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

.PHONY: help env lab test test-browser test-cpus lint typecheck unit nbval notebooks bench lock clean release autograde feedback \
  site-env site test-site test-wheel test-hub

## list every target with what it does (from the `## ` line above each target)
help:
	@awk '/^## /{doc=substr($$0,4); next} /^[a-z][a-zA-Z_-]*:([^=]|$$)/{split($$0,t,":"); \
	  printf "make %-13s %s\n", t[1], (doc ? doc : "(undocumented: add a ## line above it)")} {doc=""}' $(MAKEFILE_LIST)

## build or update only the course environment in .venv
env: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -n "$(PYTHON_EXE)" || { echo "Could not run $(PYTHON); is it installed?"; exit 1; }
	@$(PYTHON_EXE) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || \
	  { echo "attnlab needs Python 3.10 or newer; try: make $(MAKECMDGOALS) PYTHON=python3.11"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON_EXE) -m venv $(VENV) || \
	  { echo "Could not create $(VENV). On Debian or Ubuntu: sudo apt-get install python3-venv"; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade "pip>=23.1"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[$(EXTRAS)]"
	@touch $@

# Learners work in workspace/: their own copies of the lessons, exercise versions
# without solutions. A copy they have edited is never overwritten.
## start JupyterLab at the first lesson (builds .venv if needed)
lab: env
	@$(BIN)/python tools/course.py learner --into workspace
	@# nbgrader's panels need an exchange that a learner working alone does not have.
	@$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1 || true
	@echo "Starting JupyterLab on http://127.0.0.1:$(PORT)/ (the URL with its token follows); Ctrl-C stops it."
	$(BIN)/jupyter lab --no-browser $(ROOT_FLAG) \
	  --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) --ServerApp.port_retries=0 \
	  --ServerApp.root_dir=workspace --LabApp.default_url=/lab/tree/00_start_here.ipynb

# Instructors: student versions under release/, then grade submitted/ into grades.csv.
## instructors: student versions of every lesson under release/
release: env
	$(BIN)/python tools/course.py release

## instructors: grade submitted/<student>/<lesson>/ into grades.csv
autograde: env
	$(BIN)/python tools/course.py autograde

## instructors: an HTML report per graded submission under feedback/
feedback: env
	$(BIN)/python tools/course.py feedback

## lint, type check, unit and property tests, every notebook under nbval
test: lint unit nbval

## ruff check, ruff format --check and mypy (the same checks as .pre-commit-config.yaml)
lint: env
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(MAKE) --no-print-directory typecheck

## mypy on the attnlab package (configured in pyproject.toml)
typecheck: env
	$(BIN)/mypy

# pytest exits 5 when it collects nothing; that must fail the build, loudly.
# Both take one worker per core (pytest-xdist); each test module, and each notebook's
# cells, stay together on one worker (--dist loadscope), so a module's fixtures and a
# notebook's kernel are made once. JOBS=1 runs everything in one process.
JOBS ?= auto
PARALLEL := $(if $(filter 1,$(JOBS)),,-n $(JOBS) --dist loadscope)

## unit and property tests (tests/, without the browser test); the slowest 15 are listed
unit: env
	@$(PYTEST) $(PARALLEL) --durations=15 tests --ignore=tests/browser --ignore=tests/website --ignore=tests/wheel --ignore=tests/hub || { rc=$$?; [ $$rc -ne 5 ] || echo "ERROR: no tests were collected"; exit $$rc; }

## run every lesson notebook and compare its outputs (nbval)
nbval: env
	@$(PYTEST) $(PARALLEL) --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg notebooks \
	  || { rc=$$?; [ $$rc -ne 5 ] || echo "ERROR: no notebook cells were collected"; exit $$rc; }

# A real Chromium (Debian's package) drives JupyterLab: every widget renders and responds.
## every widget in a real Chromium (needs Debian's chromium package)
test-browser: env
	@$(PYTEST) tests/browser || { rc=$$?; [ $$rc -ne 5 ] || echo "ERROR: no browser tests were collected"; exit $$rc; }

# The saved outputs must hold on any CPU: the same strict nbval with other arithmetic
# underneath, then with the oldest and the newest Python the lock covers, each in its
# own environment (only what the lessons need).
OTHER_PYTHONS := 3.10 3.13
## every notebook under nbval again: other BLAS kernels, one BLAS thread, NumPy's widest SIMD off, Python 3.10 and 3.13
test-cpus: env
	$(BIN)/python tools/other_cpus.py
	@for v in $(OTHER_PYTHONS); do \
	  echo "=== Python $$v"; \
	  $(MAKE) --no-print-directory nbval PYTHON=python$$v EXTRAS=lab,test || exit 1; \
	done

# A class on a local JupyterHub (127.0.0.1): real Unix users, nbgrader's exchange,
# Chromium. Root only (it creates users); see docs/instructors.md.
## a class on a local JupyterHub with real Unix users, nbgrader's exchange and Chromium (root only)
test-hub: env
	cd tests/hub && npm ci --no-audit --no-fund --loglevel=error
	@$(PYTEST) tests/hub -s -p no:randomly || { rc=$$?; [ $$rc -ne 5 ] || echo "ERROR: no hub tests were collected"; exit $$rc; }

## re-run the lesson notebooks and save them with fresh outputs
notebooks: env
	$(BIN)/python tools/run_notebooks.py

# Python caches the bytecode of attnlab's modules after their first import, unless
# PYTHONDONTWRITEBYTECODE is set, as on some CI machines; compile them first (as pip
# does for the packages it installs), so that every lesson starts as a learner's does.
## speed and memory benchmarks, each figure with its CPU (results in bench/results/)
bench: env
	$(BIN)/python -m compileall -q attnlab
	$(BIN)/python -m bench

## regenerate constraints.txt, the pinned course environment (needs PyPI)
lock:
	$(PYTHON) tools/lock.py

## remove the environment, benchmark results and test caches
clean:
	rm -rf $(VENV) .venv-3.* bench/results .pytest_cache .hypothesis .mypy_cache .venv-site .site-cache .site-build .site-test site

# The website (make site): its own pinned environment in .venv-site, apart from the
# course's; npm and PyPI are its only sources (see tools/site.py).
SITE_VENV  ?= .venv-site
SITE_BIN   := $(SITE_VENV)/bin
SITE_STAMP := $(SITE_VENV)/.attnlab-site-env
# Where Pyodide's package wheels come from (each verified against the official lock).
PYODIDE_WHEELS ?=
AXE_VERSION := 4.10.3

## build or update only the website's own environment in .venv-site
site-env: $(SITE_STAMP)

$(SITE_STAMP): book/requirements.txt
	@test -x $(SITE_BIN)/python || $(PYTHON_EXE) -m venv $(SITE_VENV)
	$(SITE_BIN)/python -m pip install --quiet --upgrade "pip>=23.1"
	$(SITE_BIN)/python -m pip install --quiet --no-deps -r book/requirements.txt
	@touch $@

## the course website in site/: the book and JupyterLite (no install for learners)
site: site-env
	$(SITE_BIN)/python tools/site.py $(if $(PYODIDE_WHEELS),--pyodide-wheels $(PYODIDE_WHEELS))

# Chromium runs in a network namespace with only the loopback (root: unshare -n).
## build the site and test every lesson in Chromium, offline
test-site: site
	@test -f .site-cache/npm/axe-core-$(AXE_VERSION)/package/axe.min.js || { \
	  mkdir -p .site-cache/npm/axe-core-$(AXE_VERSION) && cd .site-cache/npm/axe-core-$(AXE_VERSION) && \
	  npm pack --silent axe-core@$(AXE_VERSION) >/dev/null && tar xzf axe-core-$(AXE_VERSION).tgz && \
	  rm axe-core-$(AXE_VERSION).tgz; }
	@rm -f .site-test/timings.json
	@if [ "$$(id -u)" = 0 ] && command -v unshare >/dev/null; then \
	  unshare -n sh -c 'ip link set lo up 2>/dev/null || ifconfig lo up; exec $(SITE_BIN)/python -m pytest tests/website -q -p no:cacheprovider --confcutdir=tests/website'; \
	else \
	  echo "not root: testing without a separate network namespace (requests off 127.0.0.1 still fail)"; \
	  $(SITE_BIN)/python -m pytest tests/website -q -p no:cacheprovider --confcutdir=tests/website; \
	fi

## build the wheel, install it in a fresh venv, run attnlab lab and one lesson
test-wheel: site-env
	$(SITE_BIN)/python -m pytest tests/wheel -q -p no:cacheprovider --confcutdir=tests/wheel
