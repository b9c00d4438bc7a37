# shadowreplay developer entry points. `make setup` once, `make demo` for the story, `make test` for CI,
# `make test-all` for the nightly tier.
PY312 := $(shell scripts/find-python 3.12)
PY311 := $(shell scripts/find-python 3.11)
VENV := .venv
VLLM_VENV := .venv-vllm

.PHONY: setup vllm chromium java demo test test-all test-fast bench clean

setup: $(VENV)/.installed vllm chromium java

# Headless Chromium renders the HTML report in the tests (Debian package; needs root or sudo).
chromium:
	@command -v chromium >/dev/null 2>&1 || scripts/install-chromium

$(VENV)/.installed: pyproject.toml
	@test -n "$(PY312)" || { echo "Python 3.12 is required (mitmproxy 12 needs it)"; exit 1; }
	test -x $(VENV)/bin/python || $(PY312) -m venv $(VENV)
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

# Java for Spark's local mode (`--engine spark` and its tests; Debian's OpenJDK; needs root or sudo).
java:
	@scripts/install-java

# The shadow engine: vLLM for the CPU in its own Python 3.11 venv (see docs/shadow.md).
vllm: $(VLLM_VENV)/.installed

$(VLLM_VENV)/.installed: scripts/install-vllm
	scripts/install-vllm $(VLLM_VENV)
	touch $@

demo: setup
	$(VENV)/bin/shadowreplay demo

# The per-change tier (what CI runs): every kind of real integration, without the long runs; the
# pure tests in parallel, then the integration tests serially (scripts/run-tests).
test: setup
	PYTHON=$(VENV)/bin/python scripts/run-tests change

# Everything, the long statistical runs included (nightly, releases).
test-all: setup
	PYTHON=$(VENV)/bin/python scripts/run-tests all

# The pure tests only (no real mitmdump, vLLM, Spark or S3 server): seconds to a few minutes.
test-fast: $(VENV)/.installed
	PYTHON=$(VENV)/bin/python scripts/run-tests fast

clean:
	rm -rf $(VENV) $(VLLM_VENV) .cache
