# Two entry points for a fresh machine (Python 3.11, pip, apt):
#   make run   installs the project and starts the dashboard on the bundled sample data
#   make test  installs everything (Chromium included) and runs the whole test suite
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# the bundled sample the dashboard opens with
SAMPLE ?= breast-cancer (binary)

.PHONY: run test install install-test install-bench browser lint bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e ".[dashboard,samples]"

install-test: $(BIN)/python
	$(BIN)/pip install -q -e ".[test]"

# the benchmarks' peers too (torch, torchmetrics, netcal, relplot, ...): see pyproject's bench extra
install-bench: $(BIN)/python
	$(BIN)/pip install -q -e ".[test,bench]"

browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; \
	fi

run: install
	$(BIN)/streamlit run dashboard/app.py -- --sample "$(SAMPLE)"

test: install-test browser
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -p no:cacheprovider

lint: install-test
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/ruff format --check .

bench: install-bench
	$(BIN)/python -m benchmarks.run

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis
