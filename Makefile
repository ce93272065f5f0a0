# The README's two commands: `make run` and `make test`. Each creates .venv when
# missing and installs what it needs (pinned by requirements-ci.txt), once.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --quiet --disable-pip-version-check

.PHONY: run test bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-run: $(PY) pyproject.toml requirements-ci.txt
	$(PIP) -e '.[tf]' -c requirements-ci.txt
	touch $@

$(VENV)/.installed-test: $(PY) pyproject.toml requirements-ci.txt
	$(PIP) -e '.[tf,test,ray]' -c requirements-ci.txt
	touch $@ $(VENV)/.installed-run

# rung's main job on a bundled example: profile the CNN on this machine, then decide
# how to distribute it across a fleet of hosts like this one (rung/examples/hardware.yaml);
# the same decision with its plots goes to rung-report.html.
run: $(VENV)/.installed-run
	$(VENV)/bin/rung advise rung/examples/workloads/cnn.py --hardware rung/examples/hardware.yaml \
	  --html rung-report.html

# Two passes: the tests that time steps or watch every process on the machine (marked
# serial, unless marked parallel too) run alone; the rest first, on two processes
# (pytest-xdist; tests of one xdist_group in one of them). Both always run; the first
# failure's exit code is the target's. What failed in the first pass is said again at
# the end, where a reader of the last lines (CI's) sees it.
test: SHELL := /bin/bash
test: $(VENV)/.installed-test
	@a=0; b=0; log=$$(mktemp); \
	set -o pipefail; \
	$(PY) -m pytest -q -ra -n 2 --dist loadgroup -m "not serial or parallel" --durations=10 2>&1 | tee $$log || a=$$?; \
	$(PY) -m pytest -q -ra -m "serial and not parallel" --durations=20 || b=$$?; \
	if [ $$a -ne 0 ]; then \
	  echo "== the first pass (on two processes) failed, exit code $$a; its summary again:"; \
	  sed -n '/short test summary info/,$$p' $$log | grep -v '^SKIPPED' | tail -n 40; \
	fi; \
	rm -f $$log; \
	if [ $$a -ne 0 ]; then exit $$a; fi; exit $$b

bench: $(VENV)/.installed-test
	$(PY) benchmarks/bench_advise.py
	$(PY) benchmarks/bench_published.py
	$(PY) benchmarks/bench_simulate.py
	$(PY) benchmarks/bench_launch.py
	$(PY) benchmarks/bench_profile.py
	$(PY) benchmarks/bench_ps.py
	$(PY) benchmarks/bench_accuracy.py
	$(PY) benchmarks/bench_reproduce.py
	$(PY) benchmarks/bench_imbalance.py
	$(PY) benchmarks/bench_host_pipeline.py
	$(PY) benchmarks/bench_wire_dtype.py --json benchmarks/out/wire_dtype.json

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
