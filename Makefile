# Two entry points a new user needs (see README.md): `make demo` and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CONSTRAINTS := .ci/constraints.txt

$(BIN)/judgepanel: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c $(CONSTRAINTS) -e '.[test]'
	touch $@

.PHONY: install demo test test-real lint bench
install: $(BIN)/judgepanel

demo: install
	$(BIN)/judgepanel --db sqlite:///demo.db demo

LINTED := judgepanel tests migrations $(wildcard benchmarks)

lint: install
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy

# PostgreSQL and Chromium installed (where it may: root or password-less sudo, Debian) and a
# throwaway cluster started for the run (.ci/with-services); what is still missing is counted loudly.
# Three test workers on two cores: with two, the tests waited on processes, servers and browsers
# for about a quarter of the time (docs/speed.md: two pairs of runs, 9 min 18 s against 11 min 6 s
# and 11 min 30 s against 10 min 39 s; the gain is within this VM's noise)
test: lint
	.ci/with-services $(BIN)/pytest -n 3 --dist loadgroup

# the real-model tier: ../shared/tools/local-llm's llama.cpp server with the 0.5B model (setup.sh
# is cached after its first run), every protocol end to end, then the study of docs/real-judges.md
test-real: install
	$(BIN)/pytest -m real tests/real -n 0 -p no:cacheprovider -v

bench: install
	$(BIN)/python -m benchmarks
