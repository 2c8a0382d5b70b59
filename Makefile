# make run   — set up a virtual environment and run `llmcalc count gpt2-medium`
# make test  — set up (with torch/transformers for verification) and run the whole test suite
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3

.PHONY: run test bench lint clean

$(VENV)/.core: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e . --config-settings editable_mode=compat
	$(PY) -m compileall -q llmcalc  # start fast even where PYTHONDONTWRITEBYTECODE is set
	$(VENV)/bin/llmcalc list --format csv >/dev/null  # validate the bundled configs once (spec cache)
	touch $@

$(VENV)/.test: $(VENV)/.core requirements-test.txt
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PY) -m pip install -q --disable-pip-version-check -e . --config-settings editable_mode=compat -r requirements-test.txt
	touch $@

run: $(VENV)/.core
	$(VENV)/bin/llmcalc count gpt2-medium

test: $(VENV)/.test
	$(PY) -m pytest -q
	$(VENV)/bin/llmcalc check configs/ --verify

bench: $(VENV)/.test
	$(PY) bench/count_vs_transformers.py
	$(PY) bench/check_all.py
	$(PY) bench/verify_largest.py
	$(PY) bench/startup.py
	$(PY) bench/hostile_input.py
	$(PY) bench/serve.py

lint: $(VENV)/.test
	$(PY) -m pip install -q ruff mypy types-PyYAML
	$(PY) -m ruff check llmcalc tests bench
	$(PY) -m mypy llmcalc

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache .hypothesis
