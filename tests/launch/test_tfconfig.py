"""TF_CONFIG built and checked as data: TensorFlow's rules and the run-time mistakes.
A few cases are also fed to TensorFlow's own resolver (tests marked tf) so the rules
are checked against TensorFlow, not against themselves."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rung.launch import tfconfig as T

CLUSTER = {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"]}


def cfg(task_type="worker", index=0, cluster=None, **extra):
    return {"cluster": cluster or CLUSTER, "task": {"type": task_type, "index": index}, **extra}


@pytest.mark.parametrize("config,strategy,field,words", [
    (cfg(index=2), None, "task.index", "2 is out of range for 'worker' (2 tasks)"),
    (cfg(index=-1), None, "task.index", "negative"),
    (cfg(index=1.5), None, "task.index", "expected an integer"),
    (cfg(task_type="master"), None, "task.type", "'master' is 'chief'"),
    (cfg(cluster={"master": ["a:1"], "worker": ["b:1"]}), None, "cluster.master", "unknown job"),
    (cfg(task_type="evaluator", cluster={"worker": ["a:1"]}), "multi_worker_mirrored", "task.type", "not a job"),
    (cfg(cluster={"chief": ["a:1", "b:1"], "worker": ["c:1"]}), None, "cluster.chief", "at most one chief"),
    (cfg(cluster={"worker": ["a:1", "a:1"]}), None, "cluster.worker[1]", "also worker[0]"),
    (cfg(cluster={"worker": ["a"]}), None, "cluster.worker[0]", "host:port"),
    (cfg(cluster={"worker": ["a:70000"]}), None, "cluster.worker[0]", "out of range"),
    (cfg(cluster={"worker": {"0": "a:1"}}), None, "cluster.worker", "list of addresses"),
    (cfg(cluster={"worker": ["a:1"], "ps": ["b:1"]}), "parameter_server", "cluster.chief", "needs at least one ps"),
    # ps tasks make it a parameter-server cluster even when no --strategy says so: a chief is needed
    (cfg(cluster={"worker": ["a:1"], "ps": ["b:1"]}), None, "cluster.chief", "a chief (the coordinator)"),
    (cfg(), "multi_worker_mirrored", "cluster.ps", "no parameter servers"),
    ({"task": {"type": "worker", "index": 0}}, None, "cluster", "no cluster"),
    ({"clusters": {"worker": ["a:1"]}}, None, "clusters", "did you mean 'cluster'"),
    ({"cluster": {"worker": ["a:1"]}}, None, "task", "needs a task"),
    ({}, "parameter_server", "cluster", "needs a cluster"),
    ([], None, "(top level)", "JSON object"),
    ({"cluster": []}, None, "cluster", "expected an object of jobs"),
])
def test_mistakes_are_named_with_their_field(config, strategy, field, words):
    with pytest.raises(T.TFConfigError) as e:
        T.check(config, strategy)
    assert e.value.field == field and words in e.value.message


def test_valid_configs():
    assert T.check({}) is None                                     # local training
    assert T.check(cfg(index="1")) == T.Task("worker", 1)          # TF takes "1" too
    assert T.check(cfg("ps", 0), "parameter_server") == T.Task("ps", 0)
    assert T.check(cfg("evaluator", 0, cluster={"worker": ["a:1"]})) == T.Task("evaluator", 0)
    assert T.check(cfg(rpc_layer="grpc", environment="cloud")) == T.Task("worker", 0)


def test_every_built_task_checks_and_the_set_is_a_valid_job():
    cluster = T.cluster_for("parameter_server", ["h1:1", "h2:1"], chief="h0:1", ps=["h3:1", "h4:1"])
    lines = T.all_tf_configs(cluster)
    assert [x["task"] for x in lines] == ["chief:0", "worker:0", "worker:1", "ps:0", "ps:1"]
    for x in lines:
        assert str(T.check(x["TF_CONFIG"], "parameter_server")) == x["task"]
    assert "5 tasks" in T.check_set([x["TF_CONFIG"] for x in lines], "parameter_server")


def test_set_level_mistakes():
    lines = T.all_tf_configs(T.cluster_for("multi_worker_mirrored", ["h1:1", "h2:1", "h3:1"]))
    configs = [x["TF_CONFIG"] for x in lines]
    with pytest.raises(T.TFConfigError, match="no TF_CONFIG for worker:2"):
        T.check_set(configs[:2])
    other = json.loads(json.dumps(configs[1]))
    other["cluster"]["worker"] = ["h1:1", "h2:1"]
    other["task"]["index"] = 1
    with pytest.raises(T.TFConfigError, match="differs from line 1"):
        T.check_set([configs[0], other, configs[2]])
    with pytest.raises(T.TFConfigError, match="also line 1's task"):
        T.check_set([configs[0], configs[0], configs[1], configs[2]])
    mixed = [x["TF_CONFIG"] for x in T.all_tf_configs(T.cluster_for("multi_worker_mirrored", ["localhost:1", "h2:1"]))]
    with pytest.raises(T.TFConfigError, match="loopback"):
        T.check_set(mixed)
    local = [x["TF_CONFIG"] for x in T.all_tf_configs(T.cluster_for("multi_worker_mirrored",
                                                                      ["127.0.0.1:1", "localhost:2"]))]
    assert "2 tasks" in T.check_set(local)  # all on one machine is fine


def run(*args, stdin=None, env=None):
    import os
    return subprocess.run([sys.executable, "-m", "rung", *args], input=stdin, capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})})


def test_tf_config_names_the_flag_that_gave_a_bad_address():
    r = run("tf-config", "--strategy", "multi_worker_mirrored", "--workers", "a:1,b", "--all")
    assert r.returncode == 2 and r.stderr.strip() == (
        "rung: error: tf-config: --workers [1]: expected an address 'host:port', received 'b'")
    r = run("tf-config", "--strategy", "parameter_server", "--workers", "a:1", "--ps", "x", "--chief", "c:1", "--all")
    assert r.returncode == 2 and r.stderr.strip().startswith("rung: error: tf-config: --ps [0]: ")
    # an empty variable in a script (--workers "$HOSTS"): was "internal error: StopIteration", exit 1
    r = run("tf-config", "--strategy", "multi_worker_mirrored", "--workers", "")
    assert r.returncode == 2 and r.stdout == "" and r.stderr.strip() == (
        "rung: error: tf-config: --workers: no address given; expected at least one worker 'host:port'")


def test_cli_exit_codes_and_one_line():
    r = run("tf-config", "--strategy", "multi_worker_mirrored", "--workers", "a:1,b:2", "--all")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 2
    ok = run("check-tf-config", "--set", "--strategy", "multi_worker_mirrored", stdin=r.stdout)
    assert ok.returncode == 0 and ok.stdout.startswith("valid job")
    bad = run("check-tf-config", "-", stdin='{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}')
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip() == "rung: error: <stdin>: task.index: 3 is out of range for 'worker' (1 tasks)"
    env = run("check-tf-config", env={"TF_CONFIG": '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", '
                                                    '"index": 0}}'})
    assert env.returncode == 0 and "worker:0" in env.stdout
    notjson = run("check-tf-config", "-", stdin="{cluster")
    assert notjson.returncode == 2 and "not JSON" in notjson.stderr and len(notjson.stderr.splitlines()) == 1
    # the TF_CONFIG pasted where its file goes: said so, with where it can go
    pasted = run("check-tf-config", '{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}')
    assert pasted.returncode == 2 and len(pasted.stderr.splitlines()) == 1
    assert "received a TF_CONFIG as an argument where a file name was expected" in pasted.stderr
    assert "rung check-tf-config -" in pasted.stderr and "$TF_CONFIG" in pasted.stderr
    missing = run("check-tf-config", "no-such-file.json")
    assert missing.returncode == 2 and missing.stderr.strip() == (
        "rung: error: no-such-file.json: cannot be read: No such file or directory")


def test_check_tf_config_imports_neither_tensorflow_nor_ray():
    """What a check pulls in, in a fresh interpreter (its start-up time is measured in
    benchmarks/bench_launch.py, beside a bare Python start)."""
    code = ("import sys; from rung.cli import main; rc = main(['check-tf-config', '-']); "
            "assert not any(m.split('.')[0] in ('tensorflow', 'ray', 'keras') for m in sys.modules), "
            "[m for m in sys.modules if m.startswith(('tensorflow', 'ray', 'keras'))]")
    r = subprocess.run([sys.executable, "-c", code], input="{}", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


@pytest.mark.tf
def test_tensorflow_agrees_on_what_it_can_see():
    """TensorFlow's own resolver on configs rung accepts and on ones it rejects for
    TensorFlow's reasons (not the run-time ones TensorFlow lets through)."""
    import os
    # one process for every case: the resolver reads TF_CONFIG each time it is made
    code = (
        "import json, os, sys\n"
        "os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
        "import tensorflow as tf\n"
        "from tensorflow.python.distribute import multi_worker_util as m\n"
        "for config in json.loads(sys.stdin.read()):\n"
        "    os.environ['TF_CONFIG'] = json.dumps(config)\n"
        "    r = tf.distribute.cluster_resolver.TFConfigClusterResolver()\n"
        "    try:\n"
        "        r.cluster_spec(); r.task_type; r.task_id\n"
        "        m.normalize_cluster_spec(r.cluster_spec()); m._validate_cluster_spec(r.cluster_spec(), r.task_type, r.task_id)\n"
        "        print('ok', flush=True)\n"
        "    except Exception as e:\n"
        "        print('error', type(e).__name__, flush=True)\n")
    cases = {"good": cfg(index=1), "good_str_index": cfg(index="1"), "index_out": cfg(index=2),
             "two_chiefs": cfg(cluster={"chief": ["a:1", "b:1"], "worker": ["c:1"]}),
             "type_missing": cfg("ps", 0, cluster={"worker": ["a:1"]}),
             # rung said "valid: local training" of these; TensorFlow raises TypeError
             "cluster_list": {"cluster": []}, "cluster_null": {"cluster": None}, "cluster_empty": {"cluster": {}}}
    r = subprocess.run([sys.executable, "-c", code], input=json.dumps(list(cases.values())), capture_output=True,
                       text=True, timeout=120, env={k: v for k, v in os.environ.items() if k != "TF_CONFIG"})
    answers = r.stdout.strip().splitlines()
    assert len(answers) == len(cases), r.stderr[-500:]
    for (name, config), answer in zip(cases.items(), answers):
        tf_ok = answer == "ok"
        try:
            T.check(config)
            rung_ok = True
        except T.TFConfigError:
            rung_ok = False
        assert tf_ok == rung_ok, (name, answer)
