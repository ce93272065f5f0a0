"""rung, rung.ladder and rung.spec load their exported names when first asked for
(rung._lazy): what train.py's checks and a bench task import of rung stays light."""

from __future__ import annotations

import pytest

import rung
import rung.ladder
import rung.spec
from tests.conftest import without_modules

HEAVY = ("pydantic", "numpy", "rung.ladder.walk", "rung.ladder.decision", "rung.spec.scenario", "rung.model.throughput")


def test_the_modules_train_py_and_the_bench_tasks_import_load_neither_the_ladder_nor_pydantic():
    # train.py's checks, the replica check's and a bench task's own modules, the CLI's parser,
    # and `rung launch`'s local launcher (which never times a step: no numpy)
    r = without_modules("import rung.failures, rung.kerasfit, rung.launch.tfconfig, rung.measure.workload, "
                        "rung.measure.counts, rung.measure.replicas, rung.bench.task, rung.ladder.codes, "
                        "rung.launch.local\n"
                        "from rung.cli import build_parser\nbuild_parser()", HEAVY, timeout=60)
    assert r.returncode == 0, r.stderr[-800:]


def test_the_exported_names_load_when_asked_for():
    r = without_modules("import rung\nrung.advise", ("rung.ladder.walk",), timeout=60)
    assert r.returncode == 1 and "rung.ladder.walk" in r.stderr, r.stderr[-800:]
    assert rung.advise is rung.ladder.advise and rung.Scenario is rung.spec.Scenario
    from rung.errors import InputError
    from rung.ladder.decision import Finding
    from rung.spec.scenario import parse_scenario

    assert rung.InputError is InputError and rung.ladder.Finding is Finding and rung.spec.parse_scenario is parse_scenario


@pytest.mark.parametrize("package", [rung, rung.ladder, rung.spec])
def test_a_name_a_package_does_not_export_is_an_attribute_error(package):
    with pytest.raises(AttributeError, match=f"module '{package.__name__}' has no attribute 'nope'"):
        package.nope  # noqa: B018
