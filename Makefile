# FixGraph. `make run` starts it on an embedded default; `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test lint format bench clean mutation

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "FixGraph needs Python 3.11 or newer (found $$($(PYTHON) --version))"; exit 1; }
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt '.[dev]'
	touch $(STAMP)

run: install
	bash scripts/run.sh

test: install
	bash scripts/test-services.sh run -- $(PY) -m pytest $(PYTEST_ARGS)

# Mutants of the modules that decide an answer ([tool.mutmut] in pyproject.toml)
# against the pure tests of tests/decisiontree; mypy --strict first rejects the
# mutants it can. Prints the score and the mutants no test noticed (bench/README.md
# "Mutation testing"). MUTATE='decisiontree.walk.*' runs one module's mutants only.
MUTATE ?=

mutation: install
	rm -rf mutants
	mkdir mutants
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" DEBUG=True MUTATE="$(MUTATE)" $(PY) bench/mutation_run.py \
		> mutants/run.log || { tr '\r' '\n' < mutants/run.log | tail -n 30; exit 1; }
	$(PY) bench/mutation_score.py

lint: install
	@command -v shellcheck >/dev/null || { echo "make lint needs shellcheck: apt-get install shellcheck (make test installs it)"; exit 1; }
	shellcheck --shell=sh kb/remote_scripts/*.sh
	shellcheck scripts/*.sh
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	DEBUG=True $(PY) manage.py makemigrations --check --dry-run

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install
	$(PY) bench/diagnose_accuracy.py
	$(PY) bench/ingest_quality.py

clean:
	rm -rf $(VENV) var/celery
