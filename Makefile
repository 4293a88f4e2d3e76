# Two commands on a fresh machine:  make run   (the product)   make test   (the tests)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell sha1sum requirements.txt | cut -c1-12)

.PHONY: run test install demo lint typecheck test-fast bench-import clean

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m alignment_engine.crf_kernels  # compiles both CRFs' loops once (numba's cache)
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

demo: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	$(PY) manage.py create_demo_users

run: demo
	$(PY) manage.py serve

test: install
	bash scripts/ensure_chromium.sh
	$(PY) -m pytest -n 2 --dist loadfile

test-fast: install
	$(PY) -m pytest -m "not slow and not browser"

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff format --check . || true

typecheck: install
	$(VENV)/bin/mypy alignment_engine accounts curation annotation pipeline config tests scripts

bench-import: install
	$(PY) scripts/bench_import.py

clean:
	rm -rf var staticfiles
