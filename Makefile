# attnlab: the two commands a newcomer needs are `make lab` and `make test`.
# Both build the pinned course environment in .venv first (`make env`).

PYTHON ?= python3
VENV   ?= .venv
PORT   ?= 8888
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.attnlab-env
EXTRAS := lab,test,grading,browser,binder
PYTEST := $(BIN)/python -m pytest
# Jupyter refuses to run as root unless told; CI and containers run as root.
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)

.PHONY: help env lab test test-browser test-hub lint unit nbval notebooks bench lock clean release autograde feedback

help:
	@echo "make lab     start JupyterLab at the first lesson (builds .venv if needed)"
	@echo "make test    lint, unit and property tests, every notebook under nbval"
	@echo "make test-browser  every widget in a real Chromium (needs Debian's chromium package)"
	@echo "make test-hub  a class on a local JupyterHub with real Unix users (root only)"
	@echo "make env     build or update only the course environment in $(VENV)"
	@echo "make bench   speed and memory benchmarks (results in bench/results/)"
	@echo "make release    instructors: student versions of every lesson under release/"
	@echo "make autograde  instructors: grade submitted/<student>/<lesson>/ into grades.csv"
	@echo "make feedback   instructors: an HTML report per graded submission under feedback/"
	@echo "make notebooks  re-run the lesson notebooks and save them with fresh outputs"

env: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' || \
	  { echo "attnlab needs Python 3.10 or newer; try: make $(MAKECMDGOALS) PYTHON=python3.11"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || \
	  { echo "Could not create $(VENV). On Debian or Ubuntu: sudo apt-get install python3-venv"; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade "pip>=23.1"
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[$(EXTRAS)]"
	@touch $@

# Learners work in workspace/: their own copies of the lessons, exercise versions
# without solutions. A copy they have edited is never overwritten.
lab: env
	@$(BIN)/python tools/course.py learner --into workspace
	@# nbgrader's panels need an exchange that a learner working alone does not have.
	@$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1 || true
	@echo "Starting JupyterLab on http://127.0.0.1:$(PORT)/ (the URL with its token follows); Ctrl-C stops it."
	$(BIN)/jupyter lab --no-browser $(ROOT_FLAG) \
	  --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) --ServerApp.port_retries=0 \
	  --ServerApp.root_dir=workspace --LabApp.default_url=/lab/tree/00_start_here.ipynb

# Instructors: student versions under release/, then grade submitted/ into grades.csv.
release: env
	$(BIN)/python tools/course.py release

autograde: env
	$(BIN)/python tools/course.py autograde

feedback: env
	$(BIN)/python tools/course.py feedback

test: lint unit nbval

lint: env
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# pytest exits 5 when it collects nothing; that must fail the build, loudly.
unit: env
	@$(PYTEST) tests --ignore=tests/browser --ignore=tests/hub || { rc=$$?; [ $$rc -ne 5 ] || echo "ERROR: no tests were collected"; exit $$rc; }

nbval: env
	@$(PYTEST) --nbval --nbval-current-env --sanitize-with tests/nbval_sanitize.cfg notebooks \
	  || { rc=$$?; [ $$rc -ne 5 ] || echo "ERROR: no notebook cells were collected"; exit $$rc; }

# A real Chromium (Debian's package) drives JupyterLab: every widget renders and responds.
test-browser: env
	@$(PYTEST) tests/browser || { rc=$$?; [ $$rc -ne 5 ] || echo "ERROR: no browser tests were collected"; exit $$rc; }

# A class on a local JupyterHub (127.0.0.1): real Unix users, nbgrader's exchange,
# Chromium. Root only (it creates users); see docs/instructors.md.
test-hub: env
	cd tests/hub && npm ci --no-audit --no-fund --loglevel=error
	@$(PYTEST) tests/hub -s -p no:randomly || { rc=$$?; [ $$rc -ne 5 ] || echo "ERROR: no hub tests were collected"; exit $$rc; }

notebooks: env
	$(BIN)/python tools/run_notebooks.py

bench: env
	$(BIN)/python -m bench

lock:
	$(PYTHON) tools/lock.py

clean:
	rm -rf $(VENV) bench/results .pytest_cache .hypothesis
