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

# Three passes, each always run; the first failure's exit code is the target's, and what
# failed in each is said again at the end, where a reader of the last lines (CI's) sees it.
#  1. The TensorFlow tests that assert nothing on speed (and the few without TensorFlow that
#     need their share of a CPU within seconds, `cpu_share`), on two processes
#     (pytest-xdist; tests of one xdist_group in one of them).
#  2. The serial tests of tests/measure (one TensorFlow process timing steps, which leaves
#     one of two cores mostly idle), beside the tests without TensorFlow at the lowest
#     priority (nice 19: they take what the timed steps leave; their output follows).
#  3. The other serial tests (the bench runs, the two-node Ray test), alone.
test: SHELL := /bin/bash
test: $(VENV)/.installed-test
	@rc=0; l1=$$(mktemp); l2=$$(mktemp); l3=$$(mktemp); l4=$$(mktemp); \
	set -o pipefail; \
	say() { if [ $$1 -ne 0 ]; then echo "== $$2 failed, exit code $$1; its summary again:"; \
	  sed -n '/short test summary info/,$$p' $$3 | grep -v '^SKIPPED' | tail -n 40; fi; \
	  if [ $$rc -eq 0 ]; then rc=$$1; fi; }; \
	$(PY) -m pytest -q -ra -n 2 --dist loadgroup -m "(tf or cpu_share) and (not serial or parallel)" \
	  --durations=10 2>&1 | tee $$l1; a=$$?; \
	nice -n 19 $(PY) -m pytest -q -ra -m "not tf and not cpu_share and (not serial or parallel)" -p no:cacheprovider > $$l2 2>&1 & \
	$(PY) -m pytest -q -ra -m "serial and not parallel" tests/measure --durations=10 2>&1 | tee $$l3; b=$$?; \
	wait $$!; c=$$?; \
	echo "== the tests without TensorFlow (at nice 19, beside the serial profiles):"; cat $$l2; \
	$(PY) -m pytest -q -ra -m "serial and not parallel" --ignore=tests/measure --durations=10 2>&1 | tee $$l4; d=$$?; \
	say $$a "the first pass (TensorFlow, on two processes)" $$l1; \
	say $$c "the tests without TensorFlow" $$l2; \
	say $$b "the serial profiles (tests/measure)" $$l3; \
	say $$d "the serial bench and Ray tests" $$l4; \
	rm -f $$l1 $$l2 $$l3 $$l4; exit $$rc

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
