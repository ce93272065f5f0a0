"""rung init and rung launch on this machine: the generated train.py runs for every
verdict this machine can run (one device, mirrored on logical CPU devices, multi-worker
and parameter servers as local processes with TF_CONFIG), kills recover as each
strategy does, bad input is exit 2, and the manifests validate against Kubernetes."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from rung.examples import workload_examples
from rung.failures import PS_SAME_INPUT, PS_SAME_INPUT_FIX
from tests.conftest import TINY_BUILD_MODEL, interruptible, processes_mentioning, without_frameworks

MLP = workload_examples()["mlp"]
HERE = Path(__file__).parent


def rung(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "rung", *args], capture_output=True, text=True, timeout=timeout)


def init_readme(tmp_path, scenario: dict, name: str) -> str:
    """`rung init` of the MLP from `scenario` (written as YAML), and the README it writes."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(scenario))
    r = rung("init", str(MLP), "--scenario", str(path), "--out", str(tmp_path / name))
    assert r.returncode == 0, r.stderr
    return (tmp_path / name / "README.md").read_text()


def launch(*args, timeout=600, workload=MLP):
    r = rung("launch", str(workload), *args, "--json", timeout=timeout)
    assert r.returncode == 0, r.stderr[-1500:]
    return json.loads(r.stdout)


# -- init: files, and what it refuses ----------------------------------------------------

def test_init_writes_the_files_of_each_verdict(tmp_path):
    r = rung("init", str(MLP), "--strategy", "parameter_server", "--workers", "3", "--ps-tasks", "2", "--k8s",
             "--out", str(tmp_path / "ps"))
    assert r.returncode == 0, r.stderr
    files = {str(p.relative_to(tmp_path / "ps")) for p in (tmp_path / "ps").rglob("*") if p.is_file()}
    assert files == {"train.py", "launch_ray.py", "README.md", "k8s/chief.yaml", "k8s/worker.yaml", "k8s/ps.yaml",
                     "k8s/README.md"}
    train = (tmp_path / "ps" / "train.py").read_text()
    assert 'os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")' in train
    assert train.index("TF_USE_LEGACY_KERAS") < train.index("import tensorflow")
    assert "ClusterCoordinator" in train or "ParameterServerStrategy" in train
    one = rung("init", str(MLP), "--strategy", "single_device", "--out", str(tmp_path / "one"))
    assert one.returncode == 0
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == ["README.md", "train.py"]
    # Keras 3 runs it (train.py still checks a TF_USE_LEGACY_KERAS set by hand)
    assert 'os.environ.setdefault("TF_USE_LEGACY_KERAS"' not in (tmp_path / "one" / "train.py").read_text()


def test_init_from_a_scenario_takes_the_decision(tmp_path):
    from tests.conftest import BUNDLED
    r = rung("init", str(MLP), "--scenario", str(BUNDLED / "04-multi-host.yaml"), "--out", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    d = json.loads(rung("advise", "--scenario", str(BUNDLED / "04-multi-host.yaml"), "--json").stdout)
    ray = (tmp_path / "o" / "launch_ray.py").read_text()
    assert f"WORKERS = {d['hosts']}" in ray and d["verdict"] == "multi_worker_mirrored"
    readme = (tmp_path / "o" / "README.md").read_text()
    assert "gang scheduling" in readme.lower()


@pytest.mark.parametrize("args,words", [
    (["--strategy", "needs_sharding"], "does not fit one device"),
    (["--strategy", "multi_worker_mirrored", "--workers", "1"], "2 or more workers"),
    (["--strategy", "parameter_server", "--ps-tasks", "0"], "at least one worker and one ps"),
    (["--strategy", "parameter_server", "--gpus-per-host", "-1"], "--gpus-per-host: expected 0 or more GPUs"),
    ([], "either --scenario FILE or --strategy"),
])
def test_init_refuses_what_cannot_run(tmp_path, args, words):
    r = rung("init", str(MLP), *args, "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_init_and_launch_refuse_what_is_not_a_workload_and_say_what_is(tmp_path):
    """What a newcomer passes by mistake: the folder `rung init` wrote, or its train.py
    (both name the workload to give instead), or a file that lacks make_dataset. Before,
    the folder got the generic line and train.py was wrapped in a second train.py that
    failed when it ran. The files are read, not imported (init imports no TensorFlow)."""
    job = tmp_path / "job"
    assert rung("init", str(MLP), "--strategy", "mirrored", "--out", str(job)).returncode == 0
    half = tmp_path / "half.py"
    half.write_text("import tensorflow as tf\n\ndef build_model():\n    return None\n")
    star = tmp_path / "star.py"  # names bound by `import *` cannot be read without importing
    star.write_text("from somewhere import *\n")
    needs_classes = tmp_path / "needs_classes.py"
    needs_classes.write_text("def build_model(num_classes):\n    pass\n\n\ndef make_dataset(batch_size):\n    pass\n")
    no_batch = tmp_path / "no_batch.py"
    no_batch.write_text("def build_model(classes=10):\n    pass\n\n\ndef make_dataset():\n    pass\n")
    aliased = tmp_path / "aliased.py"
    aliased.write_text("try:\n    from mine import make as build_model\nexcept ImportError:\n    raise\n"
                       "if True:\n    make_dataset = lambda batch_size, input_context=None: None\n")
    matched = tmp_path / "matched.py"  # bound under `match` and `try ... except*` (Python 3.11)
    matched.write_text("import sys\nmatch sys.platform:\n    case 'linux':\n        from mine import make as build_model\n"
                       "    case _:\n        build_model = None\n"
                       "try:\n    from mine import data as make_dataset\nexcept* ImportError:\n    raise\n")
    own = tmp_path / "own.py"  # a try at distributing by hand, before rung (a worker crashed on it)
    own.write_text("import tensorflow as tf\n\nstrategy = tf.distribute.MirroredStrategy()\n\n\ndef build_model():\n"
                   "    with strategy.scope():\n        return None\n\n\ndef make_dataset(batch_size):\n    pass\n")
    script = tmp_path / "script.py"  # a keras.io-style script that became a workload and kept its fit
    script.write_text("import tensorflow as tf\n\n\ndef build_model():\n    return None\n\n\n"
                      "def make_dataset(batch_size):\n    pass\n\n\nmodel = build_model()\n"
                      "model.fit(make_dataset(32), epochs=30)\n")
    for command in ("init", "launch"):
        extra = ["--engine", "local"] if command == "launch" else []
        for given, words in ((job, f"this is a job `rung init` wrote, for {MLP}: give that file"),
                             (job / "train.py", f"defines no build_model() and no make_dataset(): expected a workload "
                              f"file defining build_model() and make_dataset() (contract: workload v1); this is the "
                              f"train.py `rung init` wrote, for {MLP}: give that file"),
                             (half, "defines no make_dataset(): expected a workload file"),
                             (needs_classes, "build_model() requires num_classes (line 1), and rung calls build_model() "
                              "with no arguments (contract: workload v1): give it a default"),
                             (no_batch, "make_dataset() takes no batch size (line 5), and rung calls "
                              "make_dataset(batch_size, input_context)"),
                             (own, "the file constructs a tf.distribute strategy of its own where rung runs it "
                              "(MirroredStrategy (line 3)); rung calls build_model() inside the scope of the strategy "
                              "each run uses, so the file must not choose one"),
                             (script, "the file trains a model where rung runs it (model.fit (line 13)): every process "
                              "rung starts would train it first")):
            out = tmp_path / f"x-{command}"
            r = rung(command, str(given), "--strategy", "mirrored", *extra, "--out", str(out))
            assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
            assert not out.exists()
    for fine in (star, aliased, matched):  # not refused here: their import says what they lack
        r = rung("init", str(fine), "--strategy", "mirrored", "--out", str(tmp_path / fine.stem))
        assert r.returncode == 0, r.stderr


def test_init_never_overwrites_a_folder_without_force(tmp_path):
    out = tmp_path / "job"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    r = rung("init", str(MLP), "--strategy", "mirrored", "--out", str(out))
    assert r.returncode == 2 and "not empty" in r.stderr and sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    assert rung("init", str(MLP), "--strategy", "mirrored", "--out", str(out), "--force").returncode == 0
    assert (out / "mine.txt").read_text() == "keep" and (out / "train.py").exists()


def test_init_with_force_never_writes_over_the_workload_or_a_module_it_imports(tmp_path):
    """`--out` the workload's own folder with --force: a team's train.py, which the workload
    imports its model from, was replaced by rung's (and a workload named train.py by the
    script that runs it). Exit 2, one line, nothing written; a file the workload does not
    import is the --force it asked for."""
    team = MLP.read_text()
    (tmp_path / "train.py").write_text(team)
    (tmp_path / "work.py").write_text("from train import BATCH_SIZE, build_model, make_dataset  # noqa: F401\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    for workload in ("work.py", "train.py"):
        r = rung("init", str(tmp_path / workload), "--strategy", "mirrored", "--out", str(tmp_path), "--force")
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert f"{tmp_path / 'train.py'}: is the workload or a module it imports" in r.stderr
        assert (tmp_path / "train.py").read_text() == team and sorted(p.name for p in tmp_path.iterdir()) == before
    (tmp_path / "train.py").rename(tmp_path / "model.py")  # a train.py the workload does not import
    (tmp_path / "train.py").write_text("# notes\n")
    (tmp_path / "work.py").write_text("from model import BATCH_SIZE, build_model, make_dataset  # noqa: F401\n")
    r = rung("init", str(tmp_path / "work.py"), "--strategy", "mirrored", "--out", str(tmp_path), "--force")
    assert r.returncode == 0, r.stderr
    assert "WORKLOAD" in (tmp_path / "train.py").read_text() and (tmp_path / "model.py").read_text() == team


def test_init_and_tf_config_do_not_import_tensorflow_or_ray(tmp_path):
    r = without_frameworks(
        f"main(['init', {str(MLP)!r}, '--strategy', 'parameter_server', '--k8s', '--out', {str(tmp_path / 'o')!r}])\n"
        "main(['tf-config', '--strategy', 'multi_worker_mirrored', '--workers', 'a:1,b:2', '--all'])", timeout=60)
    assert r.returncode == 0, r.stderr


def test_tpu_entry_point_is_complete_and_importable(tmp_path):
    assert rung("init", str(MLP), "--strategy", "tpu", "--out", str(tmp_path / "tpu")).returncode == 0
    path = tmp_path / "tpu" / "train.py"
    text = path.read_text()
    for needed in ("TPUClusterResolver", "experimental_connect_to_cluster", "initialize_tpu_system",
                   "TPUStrategy(resolver)", "strategy.scope()"):
        assert needed in text
    spec = importlib.util.spec_from_file_location("tpu_train", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # importable without TensorFlow: it imports it in main()
    assert callable(module.main) and module.STRATEGY == "tpu"


def test_a_tpu_plan_names_its_slice(tmp_path):
    """A TPU scenario decided on 4 hosts of TPU-v4-8's 4 chips: the README and the run line name
    the slice to rent (TPU-v4-32), one ICI domain."""
    readme = init_readme(tmp_path, {
        "schema": "rung/scenario/v1",
        "workload": {"params": 110e6, "optimizer": "adam", "per_device_batch": 32, "step_seconds": 0.12,
                     "input_wait_seconds": 0.002},
        "hardware": {"device": "TPU-v4-8", "devices_per_host": 4, "max_hosts": 4},
        "goal": {"target_examples_per_second": 3000}}, "t")
    assert "on a TPU-v4-32 slice (4 hosts of 4 devices, one ICI domain)" in readme
    assert "# my-tpu: the TPU-v4-32 slice's name" in readme


def test_train_py_stops_on_a_strategy_the_workload_makes_before_importing_it(tmp_path, capsys, monkeypatch):
    """A workload changed after `rung init` to make a strategy of its own: a multi-worker
    worker that imported a file making a MirroredStrategy crashed (SIGSEGV, TensorFlow
    2.21), with no line to say why. train.py reads the file first (where rung is
    installed) and stops in one line, exit 2, before the import (train.py imports TensorFlow
    in main(), not here). So for a file that trains at import, and one that sets TensorFlow's
    threads there after the runtime started."""
    work = tmp_path / "work.py"
    work.write_text(MLP.read_text())
    assert rung("init", str(work), "--strategy", "multi_worker_mirrored", "--out", str(tmp_path / "o")).returncode == 0
    # the multi-worker train.py sets TF_USE_LEGACY_KERAS when imported: this test's alone (a
    # launch later in this process put SimCLR's mirrored train.py on tf-keras)
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", os.environ.get("TF_USE_LEGACY_KERAS", "0"))
    spec = importlib.util.spec_from_file_location("mw_train", tmp_path / "o" / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def stops_on(text: str) -> str:
        """train.py's one line on the workload `text` (exit 2)."""
        work.write_text(text)
        with pytest.raises(SystemExit) as e:
            module.load_workload(str(work))
        assert e.value.code == 2
        return capsys.readouterr().err.strip()

    line = stops_on("import tensorflow as tf\n\n\ndef strategy():\n    return tf.distribute.MirroredStrategy()\n\n\n"
                    "def build_model():\n    with strategy().scope():\n        pass\n\n\n"
                    "def make_dataset(batch_size, input_context=None):\n    pass\n")
    assert line.startswith(f"train.py: workload: {work}: the file constructs a tf.distribute strategy of its own "
                           "where rung runs it (MirroredStrategy (line 5))"), line
    # and one that trains its model at import, a script's fit kept
    line = stops_on(MLP.read_text() + "\nbuild_model().fit(make_dataset(8), steps_per_epoch=2)\n")
    assert line.startswith(f"train.py: workload: {work}: the file trains a model where rung runs it (fit (line "), line
    # and one that sets TensorFlow's threads at import, after train.py's strategy started the runtime
    import tensorflow as tf

    float(tf.constant(1.0) + 1.0)
    line = stops_on("import tensorflow as tf\n\ntf.config.threading.set_intra_op_parallelism_threads(2)\n")
    assert line.startswith(f"train.py: workload: {work}: cannot be imported: the file configures TensorFlow's runtime "
                           "where rung imports it"), line
    # and one that parses a command line at its top with an argument it requires: train.py's
    # own arguments are not the file's
    line = stops_on("import argparse\np = argparse.ArgumentParser()\np.add_argument('--data', required=True)\n"
                    "p.parse_args()\n")
    assert line.splitlines()[-1].startswith(f"train.py: workload: {work}: the file exited while it was imported "
                                            "(SystemExit: 2)"), line


@pytest.mark.tf
def test_train_py_stops_on_a_model_whose_variables_were_made_before_build_model(tmp_path, capsys, monkeypatch):
    """A model built at the top of the file is not replicated by train.py's strategy (a
    bench of one ran multi-worker with no all-reduce at all, and nothing was said): train.py
    stops in one line, exit 2, where rung is installed."""
    work = tmp_path / "work.py"
    work.write_text("import tensorflow as tf\n\nmodel = tf.keras.Sequential([tf.keras.Input((4,)), "
                    "tf.keras.layers.Dense(2)])\nmodel.compile(optimizer='sgd', loss='mse')\n\n\n"
                    "def build_model():\n    return model\n\n\n"
                    "def make_dataset(batch_size, input_context=None):\n    pass\n")
    assert rung("init", str(work), "--strategy", "single_device", "--out", str(tmp_path / "o")).returncode == 0
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", os.environ.get("TF_USE_LEGACY_KERAS", "0"))
    spec = importlib.util.spec_from_file_location("one_train", tmp_path / "o" / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit) as e:
        module.build(module.load_workload(str(work)))
    assert e.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"train.py: workload: {work}: build_model() returned a model whose variables were made "
                           "before it was called (all 2 of its variables: "), line


def test_train_py_stops_on_a_file_that_turns_eager_execution_off(tmp_path):
    """`tf.compat.v1.disable_eager_execution()` at the top: train.py stops in one line, exit 2,
    before anything trains (a process of its own: the switch is the whole process's)."""
    work = tmp_path / "work.py"
    work.write_text(MLP.read_text().replace("import tensorflow as tf\n",
                                            "import tensorflow as tf\ntf.compat.v1.disable_eager_execution()\n", 1))
    assert rung("init", str(work), "--strategy", "single_device", "--out", str(tmp_path / "o")).returncode == 0
    r = subprocess.run([sys.executable, str(tmp_path / "o" / "train.py"), "--steps", "1"], capture_output=True,
                       text=True, timeout=300, cwd=tmp_path / "o")
    assert r.returncode == 2, r.stderr[-1500:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith(f"train.py: workload: {work}: the file turns TensorFlow 2's eager execution off"), line


def test_train_py_on_tf_keras_where_tf_keras_cannot_be_imported_says_what_to_install(tmp_path):
    """A host without tf-keras: TensorFlow only warned, and the model's first tf.keras call
    failed as the workload's own error ("build_model() raised ImportError: Keras cannot be
    imported"). A module of that name that cannot be imported stands in for the missing
    package (TensorFlow imports it by that name)."""
    import os

    assert rung("init", str(MLP), "--strategy", "multi_worker_mirrored", "--workers", "2",
                "--out", str(tmp_path / "o")).returncode == 0
    hidden = tmp_path / "no_tf_keras"
    hidden.mkdir()
    (hidden / "tf_keras.py").write_text("raise ImportError(\"No module named 'tf_keras'\")\n")
    config = json.dumps({"cluster": {"worker": ["localhost:1"]}, "task": {"type": "worker", "index": 0}})
    r = subprocess.run([sys.executable, str(tmp_path / "o" / "train.py"), "--steps", "1"], capture_output=True,
                       text=True, timeout=300, cwd=tmp_path / "o",
                       env={**os.environ, "PYTHONPATH": str(hidden), "TF_CONFIG": config})
    assert r.returncode == 2, r.stderr[-1500:]
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("train.py: this job trains on tf-keras (TF_USE_LEGACY_KERAS=1), which cannot be imported")
    assert "pip install 'tf-keras==" in line and "build_model" not in r.stderr


# -- k8s ---------------------------------------------------------------------------------

@pytest.mark.parametrize("strategy,extra", [("multi_worker_mirrored", ["--workers", "3"]),
                                            ("parameter_server", ["--workers", "2", "--ps-tasks", "2"])])
def test_manifests_validate_and_every_pods_tf_config_checks(tmp_path, strategy, extra):
    import os

    import kubernetes_validate
    from kubernetes_validate.utils import latest_version

    from rung.launch import tfconfig as T
    assert rung("init", str(MLP), "--strategy", strategy, *extra, "--k8s", "--out", str(tmp_path / "o")).returncode == 0
    configs = []
    for f in sorted((tmp_path / "o" / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            kubernetes_validate.validate(doc, latest_version(), strict=True)
            if doc["kind"] != "Job":
                continue
            spec = doc["spec"]
            assert spec["completionMode"] == "Indexed" and spec["parallelism"] == spec["completions"]
            container = spec["template"]["spec"]["containers"][0]
            env = {e["name"]: e["value"] for e in container["env"]}
            script = container["command"][2].split('TF_CONFIG="$(python3 -c "')[1].split('")"')[0]
            for i in range(spec["completions"]):  # what each pod would build
                out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                                     env={**os.environ, **env, "JOB_COMPLETION_INDEX": str(i)}).stdout
                configs.append(json.loads(out))
    assert "valid job" in T.check_set(configs, strategy)


@pytest.mark.parametrize("verdict", ["multi_worker_mirrored", "parameter_server"])
def test_the_worker_pods_and_ray_workers_of_a_plan_on_gpus_ask_for_its_gpus(tmp_path, verdict):
    """A plan of hosts of 8 A100s gave k8s pods that asked for no GPU, on TensorFlow's CPU
    image: on a GPU cluster every worker would have trained on its node's CPU. And
    launch_ray.py had only --use-gpu, one GPU a worker, an eighth of the plan's devices.
    Now each worker pod asks for the host's 8 (`nvidia.com/gpu`, validated against the
    Kubernetes schema) on the -gpu image, the chief and ps pods for none, and each Ray
    worker for 8 by default. A plan on this machine's CPU asks for none."""
    import kubernetes_validate
    from kubernetes_validate.utils import latest_version

    def plan(name: str, hardware: dict) -> tuple[Path, dict]:
        scenario = {"schema": "rung/scenario/v1",
                    "workload": {"params": 25.6e6, "optimizer": "momentum", "per_device_batch": 64,
                                 "step_seconds": 0.1},
                    "hardware": hardware, "goal": {"target_examples_per_second": 8 * 640 * 3}}
        if verdict == "parameter_server":
            scenario["fleet"] = {"preemptible": True, "preemptions_per_host_hour": 0.5}
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(scenario))
        r = rung("init", str(MLP), "--scenario", str(path), "--k8s", "--out", str(tmp_path / name))
        assert r.returncode == 0, r.stderr
        d = json.loads(rung("advise", "--scenario", str(path), "--json").stdout)
        assert d["verdict"] == verdict and d["hosts"] > 1, d
        asked = {}
        for f in sorted((tmp_path / name / "k8s").glob("*.yaml")):
            for doc in yaml.safe_load_all(f.read_text()):
                kubernetes_validate.validate(doc, latest_version(), strict=True)
                if doc["kind"] == "Job":
                    [c] = doc["spec"]["template"]["spec"]["containers"]
                    asked[doc["metadata"]["name"]] = (c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu"),
                                                      c["image"])
        return path, asked

    # hosts of 8 A100s: a plan of several
    path, asked = plan("gpu", {"device": "A100-80GB", "devices_per_host": 8, "inter_host_gbps": 200,
                               "max_hosts": 8})
    gpu, image = 8, "tensorflow/tensorflow:2.21.0-gpu"
    assert asked == ({"rung-train-worker": (gpu, image)} if verdict == "multi_worker_mirrored" else
                     {"rung-train-worker": (gpu, image), "rung-train-chief": (None, image),
                      "rung-train-ps": (None, image)})
    assert "GPUS_PER_WORKER = 8\n" in (tmp_path / "gpu" / "launch_ray.py").read_text()
    assert "asks for the plan's 8 GPU(s)" in (tmp_path / "gpu" / "k8s" / "README.md").read_text()
    # the team's own image stays theirs
    r = rung("init", str(MLP), "--scenario", str(path), "--k8s", "--image", "team/tf:1", "--out", str(tmp_path / "own"))
    assert r.returncode == 0 and "image: team/tf:1\n" in (tmp_path / "own" / "k8s" / "worker.yaml"
                                                          if verdict == "parameter_server" else
                                                          tmp_path / "own" / "k8s" / "job.yaml").read_text()
    # hosts like this machine (rung's example hardware: a CPU device each): no GPU asked for
    cpu = yaml.safe_load((Path(__file__).parents[2] / "rung" / "examples" / "hardware.yaml").read_text())["hardware"]
    _, asked = plan("cpu", {**cpu, "max_hosts": 16})
    assert {n for n, _ in asked.values()} == {None} and {i for _, i in asked.values()} == {"tensorflow/tensorflow:2.21.0"}
    assert "GPUS_PER_WORKER = 0\n" in (tmp_path / "cpu" / "launch_ray.py").read_text()
    assert "No pod asks for a GPU" in (tmp_path / "cpu" / "k8s" / "README.md").read_text()
    # a plan by hand: the GPUs of its hosts given, or none
    r = rung("init", str(MLP), "--strategy", verdict, "--gpus-per-host", "4", "--k8s", "--out", str(tmp_path / "hand"))
    assert r.returncode == 0, r.stderr
    worker = "job.yaml" if verdict == "multi_worker_mirrored" else "worker.yaml"
    [job] = [d for d in yaml.safe_load_all((tmp_path / "hand" / "k8s" / worker).read_text()) if d["kind"] == "Job"]
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 4}}
    assert "GPUS_PER_WORKER = 4\n" in (tmp_path / "hand" / "launch_ray.py").read_text()


def test_pods_of_a_tf_keras_plan_install_tf_keras_where_the_image_has_none(tmp_path):
    """The manifests run tensorflow/tensorflow:2.21.0 with TF_USE_LEGACY_KERAS=1, and that
    image has Keras 3 and no tf-keras: every pod would have failed on its first tf.keras.
    Each pod now runs the command's first part, installing the tf-keras of the image's
    TensorFlow when it cannot import one. Run here by the shell, with this environment's
    Python as the pod's python3 and a stand-in pip that records what it was asked."""
    import os

    assert rung("init", str(MLP), "--strategy", "multi_worker_mirrored", "--workers", "2", "--k8s",
                "--out", str(tmp_path / "o")).returncode == 0
    [job] = [d for d in yaml.safe_load_all((tmp_path / "o" / "k8s" / "job.yaml").read_text()) if d["kind"] == "Job"]
    command = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    install = command.split(" && export TF_CONFIG=")[0]
    assert "pip install" in install and "tf-keras" in (tmp_path / "o" / "k8s" / "README.md").read_text()
    bin_dir, asked = tmp_path / "bin", tmp_path / "asked"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    (bin_dir / "pip").write_text(f"#!/bin/sh\necho \"$@\" > {asked}\n")
    for f in ("python3", "pip"):
        (bin_dir / f).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    subprocess.run(["/bin/sh", "-c", install], env=env, check=True, timeout=120)
    assert not asked.exists()  # tf-keras is here: nothing installed
    hidden = tmp_path / "no_tf_keras"  # an image without it
    hidden.mkdir()
    (hidden / "tf_keras.py").write_text("raise ImportError('not in this image')\n")
    subprocess.run(["/bin/sh", "-c", install], env={**env, "PYTHONPATH": str(hidden)}, check=True, timeout=120)
    from importlib.metadata import version

    tf = version("tensorflow").rsplit(".", 1)[0]
    assert asked.read_text().split()[-1] == f"tf-keras=={tf}.*"


def test_the_k8s_configmap_holds_the_modules_the_workload_imports(tmp_path):
    """The k8s README put train.py and the workload in the ConfigMap (mounted at /app), and
    nothing the workload imports from its folder: a team's `from models import net` failed in
    every pod. Its kubectl line now names those modules; one in a package folder, which a
    ConfigMap's flat keys cannot hold, is said. The line is read back and the ConfigMap's
    files laid out as the pod sees them: the workload imports there."""
    import shlex

    team = tmp_path / "team"
    (team / "pkg").mkdir(parents=True)
    (team / "models.py").write_text("def net():\n    return 'net'\n")
    (team / "pkg" / "__init__.py").write_text("")
    (team / "job.py").write_text("from models import net\n\n\ndef build_model():\n    return net()\n\n\n"
                                 "def make_dataset(batch_size, input_context=None):\n    return None\n")
    r = rung("init", str(team / "job.py"), "--strategy", "multi_worker_mirrored", "--workers", "2", "--k8s",
             "--out", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    readme = (tmp_path / "o" / "k8s" / "README.md").read_text()
    [line] = [x for x in readme.splitlines() if x.startswith("kubectl create configmap")]
    app = tmp_path / "app"  # the ConfigMap's mount: key -> file
    app.mkdir()
    for arg in shlex.split(line)[4:]:
        key, _, source = arg.removeprefix("--from-file=").partition("=")
        (app / key).write_text((Path(source) if source else tmp_path / "o" / key).read_text())
    assert sorted(p.name for p in app.iterdir()) == ["models.py", "train.py", "workload.py"]
    out = subprocess.run([sys.executable, "-c", "import workload; print(workload.build_model())"], cwd=app,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "net", out.stderr
    assert "pkg" not in readme  # nothing imports it yet
    (team / "job.py").write_text("import pkg\n" + (team / "job.py").read_text())
    r = rung("init", str(team / "job.py"), "--strategy", "multi_worker_mirrored", "--workers", "2", "--k8s",
             "--out", str(tmp_path / "o2"))
    assert r.returncode == 0, r.stderr
    assert "modules in folders of its own" in (tmp_path / "o2" / "k8s" / "README.md").read_text()


# -- launch on local processes: every runnable verdict -----------------------------------

# what the chief of a parameter-server launch says of a pipeline every worker copies as it is
# (make_dataset draws its data once, on the coordinator, and shuffles nothing)
PS_UNSHARDED = "INPUT_NOT_SHARDED: " + PS_SAME_INPUT + "; " + PS_SAME_INPUT_FIX

@pytest.mark.tf
@pytest.mark.parametrize("args,workers,keras", [
    (["--strategy", "single_device"], 1, "keras3"),
    (["--strategy", "mirrored"], 1, "keras3"),
    (["--strategy", "multi_worker_mirrored", "--workers", "2"], 2, "tf_keras"),
    (["--strategy", "parameter_server", "--workers", "2", "--ps-tasks", "1"], 2, "tf_keras"),
])
def test_generated_train_py_runs_for_each_verdict(args, workers, keras):
    """The parameter-server run trains a model compiled with jit_compile=True: an XLA step
    on a worker cannot read the ps tasks' variables (the chief failed, "Trying to access
    resource ... located in device /job:ps"), and train.py turns XLA off there. The plain
    mlp runs under parameter servers in the bench's tests and the kill test below."""
    ps = "parameter_server" in args
    r = launch(*args, "--engine", "local", "--steps", "8", "--epochs", "2", workload=HERE / "xla.py" if ps else MLP)
    # xla.py draws its data in make_dataset, which under parameter servers runs once, on the
    # coordinator: every worker copies that pipeline, and the chief says so (as rung profile would)
    assert r["notes"] == (["jit_compile=True turned off: an XLA step on a worker cannot read the variables the ps "
                           "tasks hold", PS_UNSHARDED] if ps else [])
    assert r["schema"] == "rung/launch/v1" and r["steps_completed"] == 16
    assert r["workers"] == workers and r["keras"] == keras and r["examples_per_second"] > 0
    assert len(r["epochs"]) == 2 and r["restarts"] == 0


@pytest.mark.tf
@pytest.mark.parametrize("args,restarts", [
    (("--strategy", "multi_worker_mirrored", "--workers", "2", "--steps", "30", "--kill", "1@12"), 1),
    (("--strategy", "parameter_server", "--workers", "2", "--ps-tasks", "1", "--steps", "200", "--kill", "1@30"), 0),
])
def test_a_kill_lands_on_a_model_that_steps_an_optimizer_of_its_own(args, restarts):
    """A local launch with a worker killed: multi-worker restarts and resumes from its
    backup, losing at most one backup interval; parameter servers carry on to the last
    step. The model steps an optimizer of its own: its compiled-in one never steps, and a
    count read from model.optimizer stayed at 0, so the kill never came (killed_at_step
    None, no restart). (The same kills of the plain mlp were tests of their own; this
    model is the harder case of each.)"""
    r = rung("launch", str(HERE / "own_optimizer.py"), *args, "--engine", "local", "--json")
    assert r.returncode == 0, r.stderr[-1500:]
    out = json.loads(r.stdout)
    # its own train_step divides its loss across replicas: rung launch's check (multi-worker)
    # finds it so and says nothing (parameter servers sum nothing: no check)
    assert not any("LOSS_NOT_SCALED" in n or "is not known" in n for n in out["notes"] + r.stderr.splitlines())
    assert ("rung launch: checking that the model's own step" in r.stderr) == (restarts == 1)
    assert out["killed_at_step"] is not None and out["restarts"] == restarts
    steps = int(args[args.index("--steps") + 1])
    assert out["steps_completed"] == steps
    if restarts:
        assert out["resumed_from_step"] <= out["killed_at_step"]
        assert out["killed_at_step"] - out["resumed_from_step"] <= 5  # at most one backup interval lost


def two_worker_job(tmp_path, startup_seconds):
    """A 2-worker multi-worker job's files and its local engine, not started."""
    from rung.cli.init import write_files
    from rung.launch.emit import Job
    from rung.launch.local import LocalJob
    job = Job("multi_worker_mirrored", workers=2)
    write_files(job, MLP, tmp_path / "o")
    (tmp_path / "run").mkdir()
    return LocalJob(job, tmp_path / "o", 5, 1, tmp_path / "run", startup_seconds=startup_seconds,
                    deadline_seconds=120)


@pytest.mark.tf
def test_a_task_that_never_joins_is_named_and_the_rest_ended(tmp_path):
    import time

    from rung.launch.local import _WAITING_FOR, LaunchError
    lj = two_worker_job(tmp_path, 1)
    try:
        procs = lj.start(0, 0, only=["worker:0"])  # worker:1 never starts
        # once worker:0 says whom it waits for (TensorFlow's coordination service), the
        # start-up deadline (1 s) has passed: waiting out a longer one proved nothing more
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _WAITING_FOR.search(procs[0].log.read_text(errors="replace")):
            assert procs[0].popen.poll() is None, procs[0].log.read_text(errors="replace")[-1500:]
            time.sleep(0.2)
        with pytest.raises(LaunchError, match="worker:1 never joined"):
            lj.wait(procs, time.perf_counter() - 2, None)
    finally:
        lj.procs.close()
    assert all(p.popen.poll() is not None for p in procs)  # ended, though TensorFlow ignores SIGTERM


@pytest.mark.parametrize("args,words", [
    (["--strategy", "multi_worker_mirrored", "--engine", "local", "--kill", "one@two"], "expected K@STEP"),
    (["--strategy", "multi_worker_mirrored", "--engine", "local", "--kill", "5@3"], "worker 5 does not exist"),
    (["--strategy", "single_device", "--engine", "local", "--kill", "0@3"], "no workers to kill"),
    (["--strategy", "multi_worker_mirrored", "--engine", "ray", "--address", "nohost"], "expected HOST:PORT"),
    (["--strategy", "mirrored", "--engine", "ray"], "runs in one process"),
    (["--strategy", "multi_worker_mirrored", "--engine", "local", "--checkpoint-dir", "/x"], "goes with --engine ray"),
    # each of these ran, or failed only after starting processes (exit 1): a kill past the
    # job's end trained without it, 0 s to start ended every task, 100,000 local workers ran
    # out of file handles, and --epochs 0 named --steps
    (["--strategy", "multi_worker_mirrored", "--engine", "local", "--steps", "5", "--kill", "1@9"],
     "step 9 is at or past the job's last step (5 steps x 1 epoch(s) = 5)"),
    (["--strategy", "mirrored", "--engine", "local", "--startup-seconds", "0"], "--startup-seconds: expected"),
    (["--strategy", "mirrored", "--engine", "local", "--deadline", "-1"], "--deadline: expected"),
    (["--strategy", "mirrored", "--engine", "local", "--epochs", "0"], "--epochs: expected at least 1, received 0"),
    (["--strategy", "multi_worker_mirrored", "--engine", "local", "--workers", "100000"], "expected at most 32"),
])
def test_launch_bad_input_is_exit_2_one_line(args, words):
    r = rung("launch", str(MLP), *args)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""


def test_a_checkpoint_folder_the_ray_workers_do_not_share_is_bad_input(tmp_path):
    # what launch_ray.py prints and exits with when its workers do not see one another's
    # files in --checkpoint-dir (launch_ray.py's probe is tested in test_ray.py; a second
    # machine's own folder, in the two-node test's namespaces, was run by hand: 2026-12-04)
    from argparse import Namespace

    from rung.cli.launch import run_ray_launcher
    from rung.errors import InputError

    line = ("launch_ray.py: --checkpoint-dir /data/ck is not one folder for every worker: worker 0 (node 10.0.0.1) "
            "does not see worker 1's file there after 30 s. Ray Train restarts the group from the chief's backup, "
            "which every worker reads there: give a folder every node mounts (NFS, a cloud bucket)")
    (tmp_path / "launch_ray.py").write_text(f"import sys\nprint('Connected to Ray cluster.')\n"
                                            f"print({line!r}, file=sys.stderr)\nsys.exit(2)\n")
    args = Namespace(steps=5, epochs=1, address=None, workers=2, deadline=60.0, checkpoint_dir="/data/ck")
    with pytest.raises(InputError) as e:
        run_ray_launcher(tmp_path, args, None)
    assert str(e.value) == "--checkpoint-dir: " + line[len("launch_ray.py: --checkpoint-dir "):]


@pytest.mark.tf
@pytest.mark.parametrize("how", ["ctrl-c", "sigkill"])
def test_every_task_ends_with_the_launcher(tmp_path, how):
    """Ctrl-C: rung launch ends its tasks and says so. SIGKILL (or the OOM killer) skips
    every `finally`: the tasks, the user's train.py in sessions of their own, used to train
    on for as long as their steps lasted; the kernel now ends them with the launcher."""
    import signal
    import time
    out = tmp_path / "job"
    p = subprocess.Popen([sys.executable, "-m", "rung", "launch", str(MLP), "--strategy", "multi_worker_mirrored",
                          "--workers", "2", "--engine", "local", "--steps", "100000", "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible)
    deadline = time.time() + 120
    train = str(out / "train.py")
    while time.time() < deadline and len(processes_mentioning(train)) < 2:
        time.sleep(0.5)
    tasks = processes_mentioning(train)
    assert len(tasks) >= 2, "the workers never started"

    def training():  # train.py writes the step count to its progress file when training begins
        return any(f.read_text().strip().isdigit() for f in (out / "run").glob("*.progress"))

    while time.time() < deadline and not training():  # they joined: the group formed
        time.sleep(0.2)
    assert training(), "the workers never began training"
    time.sleep(0.5)
    try:
        if how == "ctrl-c":
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=60)
            assert p.returncode == 130 and "interrupted" in err
            time.sleep(1)  # rung launch waited for them: nothing to wait for
            assert processes_mentioning(train) == []
        else:
            p.send_signal(signal.SIGKILL)
            p.communicate(timeout=60)
            assert p.returncode == -signal.SIGKILL
        deadline = time.time() + 10
        while time.time() < deadline and processes_mentioning(train):
            time.sleep(0.2)
        assert processes_mentioning(train) == []
    finally:
        for pid in tasks:  # a failed assertion must not leave them training
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_task_that_crashes_is_named_by_its_signal_with_its_log(tmp_path):
    """A worker that crashes inside TensorFlow prints no Python line (a multi-worker worker
    that made a MirroredStrategy of its own: SIGSEGV): launch said "exited with code -11"
    and the tail of TensorFlow's start-up log. Now the signal, the task's own last line, and
    where its whole log is."""
    from rung.launch.local import Proc, _failure

    log = tmp_path / "worker0-a0.log"
    script = ("import os, resource, signal\nresource.setrlimit(resource.RLIMIT_CORE, (0, 0))\n"
              "print('I1204 17:10:14.951160   28679 coordination_service.cc:502] Waiting for 1/2 tasks.')\n"
              "print('building the model', flush=True)\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    with open(log, "w") as out:
        p = subprocess.Popen([sys.executable, "-c", script], stdout=out, stderr=subprocess.STDOUT)
        p.wait(timeout=60)
    said = str(_failure(Proc("worker:0", p, log, tmp_path / "progress")))
    assert said == f"worker:0 crashed with SIGSEGV (signal 11): building the model; its log: {log}"


@pytest.mark.tf
def test_launch_a_workload_train_py_cannot_use_is_exit_2(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import tensorflow as tf\nraise RuntimeError('no GPU quota')\n\n\ndef build_model():\n    pass\n\n\n"
                   "def make_dataset(batch_size, input_context=None):\n    pass\n")
    r = rung("launch", str(bad), "--strategy", "multi_worker_mirrored", "--workers", "2", "--engine", "local",
             "--steps", "3")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == f"rung: error: {bad}: cannot be imported: RuntimeError: no GPU quota"


@pytest.mark.tf
@pytest.mark.parametrize("args", [("--strategy", "single_device"),
                                  ("--strategy", "parameter_server", "--workers", "1", "--ps-tasks", "1")])
def test_a_pipeline_without_batch_stops_train_py_in_one_line(args):
    """train.py asks what rung profile asks of make_dataset's element spec before fit. A
    pipeline without .batch() crashed the parameter-server chief (exit -6, "terminate
    called after throwing", a Keras shape error of the Sequential's input) and launch
    said exit 1; now every task stops at once and launch says exit 2, one line."""
    path = HERE / "unbatched.py"
    r = rung("launch", str(path), *args, "--engine", "local", "--steps", "3")
    assert r.returncode == 2 and r.stdout == "", r.stderr[-800:]
    assert r.stderr.strip() == (f"rung: error: {path}: make_dataset(32) yields single examples, not batches (the "
                                "labels are scalars (shape ())); end the pipeline with .batch(batch_size), as the "
                                "per-replica batch")


@pytest.mark.tf
def test_a_step_that_fails_at_the_default_batch_is_told_the_batch_size_the_file_keeps():
    """keras.io's DDIM keeps `batch_size = 64` of its own, used in its own train_step: train.py
    at rung's default of 32 failed on TensorFlow's shapes, and launch said only that (rung
    profile and rung bench named the file's batch). The launch that gives --batch runs: the
    bench's test of the same file shows it."""
    work = HERE.parent / "measure" / "workloads" / "own_batch.py"
    r = rung("launch", str(work), "--strategy", "single_device", "--engine", "local", "--steps", "2")
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 1 and "Dimensions must be equal" in last, r.stderr[-1500:]
    assert last.endswith("; the file sets batch_size = 8 and rung ran batches of 32, its default (it reads a file's "
                         "batch from BATCH_SIZE): give --batch 8, or name it BATCH_SIZE"), last


def test_init_at_the_default_batch_of_a_file_that_keeps_its_own_says_both_numbers(tmp_path):
    """The same file at `rung init`: its train.py trains at 32 a device unless told, said when it
    is written (and nothing with --batch)."""
    from tests.conftest import TINY_BUILD_MODEL

    path = tmp_path / "gpt.py"
    path.write_text("batch_size = 128\n" + TINY_BUILD_MODEL + "\n\ndef make_dataset(b, input_context=None):\n"
                    "    return tf.data.Dataset.from_tensor_slices((tf.zeros((64, 4)), tf.zeros((64, 1))))"
                    ".repeat().batch(b)\n")
    r = rung("init", str(path), "--strategy", "mirrored", "--out", str(tmp_path / "o"))
    assert r.returncode == 0 and r.stderr == (
        "rung init: warning: train.py trains at a batch of 32, rung's default (it reads a file's batch from "
        "BATCH_SIZE); the file sets batch_size = 128: if each device trains on 128 examples a step, give --batch 128 "
        "or name it BATCH_SIZE (or train.py --batch 128: the examples a step and its memory follow the batch)\n"), \
        r.stderr
    assert "\nPER_REPLICA_BATCH = 32\n" in (tmp_path / "o" / "train.py").read_text()  # what it said
    r = rung("init", str(path), "--strategy", "mirrored", "--out", str(tmp_path / "o2"), "--batch", "128")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "\nPER_REPLICA_BATCH = 128\n" in (tmp_path / "o2" / "train.py").read_text()


@pytest.mark.tf
def test_a_run_at_the_default_batch_of_a_file_that_keeps_its_own_says_both_numbers(tmp_path):
    """keras.io's miniature GPT sets batch_size = 128 and its step runs at any batch: train.py
    trained it at rung's default of 32 a device without a word. Now the run's notes say both
    numbers and how to give the file's."""
    from tests.conftest import TINY_BUILD_MODEL

    path = tmp_path / "gpt.py"
    path.write_text("batch_size = 128\n" + TINY_BUILD_MODEL + "\n\ndef make_dataset(b, input_context=None):\n"
                    "    return tf.data.Dataset.from_tensor_slices((tf.zeros((64, 4)), tf.zeros((64, 1))))"
                    ".repeat().batch(b)\n")
    r = rung("launch", str(path), "--strategy", "single_device", "--engine", "local", "--steps", "2", "--json")
    assert r.returncode == 0, r.stderr[-1500:]
    d = json.loads(r.stdout)
    assert d["steps_completed"] == 2 and [n for n in d["notes"] if "batch_size = 128" in n] == [
        "trained at a batch of 32, rung's default (it reads a file's batch from BATCH_SIZE); the file sets "
        "batch_size = 128: if each device trains on 128 examples a step, give --batch 128 or name it BATCH_SIZE "
        "(the examples a step and its memory follow the batch)"], d


@pytest.mark.tf
def test_optimizers_a_train_step_would_build_inside_the_replicated_step_stop_mirrored_train_py():
    """keras.io's SimCLR keeps two Adams of its own, not built: Keras 3's mirrored fit builds
    them inside the replicated step and fails ("You must feed a value for placeholder
    tensor", TensorFlow's words were all train.py said). train.py now stops before fit, in
    one line, with what to change (that the change trains is checked against Keras's own
    mirrored fit in tests/measure/test_real_models.py)."""
    simclr = HERE.parent / "measure" / "workloads" / "simclr.py"
    r = rung("launch", str(simclr), "--strategy", "mirrored", "--engine", "local", "--steps", "3",
             "--no-replica-check")
    assert r.returncode == 2 and r.stdout == "", r.stderr[-800:]
    assert r.stderr.strip().startswith(f"rung: error: {simclr}: build every optimizer the train_step uses in "
                                       "build_model(), under the strategy's scope (contrastive_optimizer (Adam), "
                                       "probe_optimizer (Adam): ")


@pytest.mark.tf
def test_a_model_that_fails_only_under_a_strategy_is_told_what_to_change(tmp_path):
    # keras.io's SimCLR, marked built, with augmenters that are Sequentials without an Input:
    # it trains without a strategy, and under one (OneDeviceStrategy, a single_device
    # train.py) Keras 3's fit cannot build it. train.py stops in one line that names the
    # layers to build, then Keras's words without its terminal colours; before, launch
    # said to mark the model built, which it was
    text = (HERE.parent / "measure" / "workloads" / "simclr.py").read_text()
    seq = "keras.Sequential([keras.Input(shape=(SIZE, SIZE, 3)), layers.Rescaling(1 / 255),"
    assert seq in text and "    model.built = True\n" in text
    marked = tmp_path / "simclr_marked.py"
    marked.write_text(text.replace(seq, "keras.Sequential([layers.Rescaling(1 / 255),"))
    r = rung("launch", str(marked), "--strategy", "single_device", "--engine", "local", "--steps", "3")
    assert r.returncode == 2 and r.stdout == "", r.stderr[-800:]
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"rung: error: {marked}: build every layer of the model, not only the model "
                           "(model.built = True): contrastive_augmenter (Sequential), classification_augmenter "
                           "(Sequential) are not")
    assert line.endswith("(Model ContrastiveModel does not have a `call()` method implemented.)") and "\x1b[" not in line
    # any failure rung knows the same way: a step drawing keras.random numbers without a seed
    # trains on one device and fails under MirroredStrategy (before: exit 1, the hint beside
    # the task's last lines, and a traceback for whoever ran train.py by hand)
    unseeded = HERE.parent / "measure" / "workloads" / "unseeded.py"
    r = rung("launch", str(unseeded), "--strategy", "mirrored", "--engine", "local", "--steps", "3",
             "--no-replica-check")
    assert r.returncode == 2 and r.stdout == "", r.stderr[-800:]
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"rung: error: {unseeded}: a variable is created inside the distributed step: random "
                           "numbers drawn without a seed")
    assert "(ValueError: tf.function only supports singleton tf.Variables" in line and "\x1b[" not in line


@pytest.mark.tf
def test_a_keras_3_import_is_warned_at_init_and_stops_launch_at_once(tmp_path):
    # keras.io's VAE imports Keras 3 itself; multi-worker fit runs on tf-keras, which
    # cannot train it. init says so (and writes the files); train.py stops before fit
    # with one line, where it failed deep inside fit before
    vae = HERE.parent / "measure" / "workloads" / "vae.py"
    r = rung("init", str(vae), "--strategy", "multi_worker_mirrored", "--out", str(tmp_path / "job"))
    assert r.returncode == 0 and "warning: KERAS3_IMPORT" in r.stderr and "import keras (line 12)" in r.stderr
    assert "KERAS3_IMPORT" in (tmp_path / "job" / "README.md").read_text()
    r = rung("init", str(MLP), "--strategy", "multi_worker_mirrored", "--out", str(tmp_path / "mlp"))
    assert r.returncode == 0 and "KERAS3_IMPORT" not in r.stderr + (tmp_path / "mlp" / "README.md").read_text()
    # one device on tf-keras because --keras asked it: the same warning, with that reason
    # (before, nothing was said, and train.py stopped on it)
    r = rung("init", str(vae), "--strategy", "single_device", "--keras", "tf_keras", "--out", str(tmp_path / "one"))
    assert r.returncode == 0 and "warning: KERAS3_IMPORT: train.py runs on tf-keras (--keras tf_keras asked for it)" \
        in r.stderr, r.stderr
    r = rung("init", str(vae), "--strategy", "single_device", "--out", str(tmp_path / "one_k3"))
    assert r.returncode == 0 and "KERAS3_IMPORT" not in r.stderr
    r = rung("launch", str(vae), "--strategy", "multi_worker_mirrored", "--engine", "local", "--steps", "2")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        f"rung: error: {vae}: build_model() returned a Keras 3 model, built from `import keras`, and this "
        "script runs on tf-keras, which cannot train it: build it from tf.keras (`from tensorflow import keras`)")


def test_init_reads_the_modules_a_workload_imports_from_its_folder(tmp_path):
    """The model kept in models.py beside the workload: init warns of its Keras 3 import and
    its XLA step as it does when the workload holds them (before, it read the workload's
    text alone and said nothing), and a tf_keras import there puts train.py on tf-keras."""
    (tmp_path / "models.py").write_text("import keras\n\n\ndef make():\n    model = keras.Sequential()\n"
                                        "    model.compile(jit_compile=True)\n    return model\n")
    (tmp_path / "work.py").write_text("from models import make as build_model\n\n\n"
                                      "def make_dataset(batch_size, input_context=None):\n    pass\n")
    r = rung("init", str(tmp_path / "work.py"), "--strategy", "parameter_server", "--out", str(tmp_path / "ps"))
    assert r.returncode == 0, r.stderr
    assert "warning: KERAS3_IMPORT" in r.stderr and "(import keras (models.py, line 1))" in r.stderr
    assert "warning: JIT_COMPILE" in r.stderr and "compile(jit_compile=True) (models.py, line 6)" in r.stderr
    (tmp_path / "models.py").write_text("import tf_keras as keras\n")
    r = rung("init", str(tmp_path / "work.py"), "--strategy", "mirrored", "--out", str(tmp_path / "mirrored"))
    assert r.returncode == 0 and "KERAS3_IMPORT" not in r.stderr, r.stderr
    assert 'os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")' in (tmp_path / "mirrored" / "train.py").read_text()
    # a workload reached through a symlink: Python puts the folder of the file it points to
    # first on sys.path, and that is where its modules are read (before: the link's folder)
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "work.py").symlink_to(tmp_path / "work.py")
    r = rung("init", str(tmp_path / "links" / "work.py"), "--strategy", "mirrored", "--out", str(tmp_path / "l"))
    assert r.returncode == 0, r.stderr
    assert 'os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")' in (tmp_path / "l" / "train.py").read_text()


@pytest.mark.tf
def test_a_model_written_for_keras_3_alone_stops_train_py_on_tf_keras_in_one_line():
    # LeakyReLU(negative_slope=...) is Keras 3's argument (tf-keras: alpha): the model builds
    # on Keras 3 and not on tf-keras, where multi-worker fit runs. Before, the launch's line
    # was the middle of a traceback ("... validate_kwargs(kwargs, allowed_kwargs) | ..."), exit 1
    path = HERE.parent / "measure" / "workloads" / "keras3_args.py"
    r = rung("launch", str(path), "--strategy", "multi_worker_mirrored", "--engine", "local", "--steps", "2")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith(f"rung: error: {path}: build_model() raised TypeError: ") and "negative_slope" in line
    assert "(line 18)" in line and "train.py runs multi_worker_mirrored on tf-keras" in line


@pytest.mark.tf
def test_a_file_on_tf_keras_itself_gets_a_train_py_on_tf_keras_for_every_strategy(tmp_path):
    # `import tf_keras as keras` (the Keras 3 migration guide's way to keep Keras 2): before,
    # a single-device or mirrored train.py ran on Keras 3, whose fit cannot take that model
    keras2 = HERE.parent / "measure" / "workloads" / "keras2.py"
    r = rung("init", str(keras2), "--strategy", "single_device", "--out", str(tmp_path / "one"))
    assert r.returncode == 0, r.stderr
    train = (tmp_path / "one" / "train.py").read_text()
    assert 'os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")' in train
    assert "imports tf_keras itself (import tf_keras (line 6))" in (tmp_path / "one" / "README.md").read_text()
    r = rung("launch", str(keras2), "--strategy", "mirrored", "--engine", "local", "--steps", "3", "--json")
    assert r.returncode == 0, r.stderr[-800:]
    result = json.loads(r.stdout)
    assert result["keras"] == "tf_keras" and result["steps_completed"] >= 3


@pytest.mark.tf
def test_a_port_in_use_is_named(tmp_path):
    import socket
    import time

    from rung.launch.local import LaunchError
    lj = two_worker_job(tmp_path, 60)
    taken = lj.cluster["worker"][1]
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", int(taken.rsplit(":", 1)[1])))
    blocker.listen(1)
    try:
        procs = lj.start(0, 0)
        with pytest.raises(LaunchError) as e:
            lj.wait(procs, time.perf_counter(), None)
        assert "worker:1" in str(e.value) and "in use" in str(e.value)
    finally:
        lj.procs.close()
        blocker.close()


@pytest.mark.tf
def test_a_port_taken_between_picking_and_binding_starts_the_job_again_on_new_ports(tmp_path, monkeypatch):
    # rung picks free ports (bound, then released) and the tasks bind them a second later;
    # another process can take one in between (tests running side by side, a busy machine).
    # Here the first pick's worker:1 port is held by a socket of the test's own
    import socket

    import rung.launch.local as L
    from rung.cli.init import write_files
    from rung.launch.emit import Job

    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen(1)
    held = blocker.getsockname()[1]
    picks = []

    def first_pick_taken(n, host="127.0.0.1"):
        ports = L.free_ports.__wrapped__(n, host)
        picks.append(ports)
        return ports[:1] + [held] + ports[2:] if len(picks) == 1 else ports

    first_pick_taken.__wrapped__ = L.free_ports
    monkeypatch.setattr(L, "free_ports", first_pick_taken)
    job = Job("multi_worker_mirrored", workers=2)
    write_files(job, MLP, tmp_path / "o")
    try:
        r = L.launch_local(job, tmp_path / "o", 5, 1, tmp_path / "run", startup_seconds=120, deadline_seconds=300)
    finally:
        blocker.close()
    assert r["steps_completed"] == 5 and len(picks) == 2
    assert r["notes"][0].startswith("started again on new ports: worker:1 could not serve on ")
    assert r["notes"][0].endswith(f":{held}: the port is in use by another process")  # which port
    # the first try's logs are kept beside the second's
    assert {p.name for p in (tmp_path / "run").glob("worker1-*.log")} == {"worker1-a0.log", "worker1-a0r1.log"}


@pytest.mark.tf
@pytest.mark.parametrize("workload, field, details, code, also", [
    # a model that looks its string columns up itself (tensorflow#80951)
    (HERE.parent / "measure" / "workloads" / "string_features.py", "string_inputs", ["features/words"],
     "STRING_INPUTS", {"params": 31}),
    # a ragged bag of words ("'RaggedTensor' object has no attribute 'device'"; before, rung's
    # train.py ran it on Keras 3 and exited 1); it shards itself
    (HERE / "ragged.py", "ragged_or_sparse_inputs", ["features is ragged"], "RAGGED_OR_SPARSE_INPUTS",
     {"worker_input": "distinct"}),
], ids=["strings", "ragged"])
def test_what_keras_3_mirrored_fit_cannot_take_is_found_warned_and_run_on_tf_keras(tmp_path, workload, field,
                                                                                  details, code, also):
    # Keras 3's mirrored fit fails on these models. The profile finds what they take, the
    # plan warns, and the train.py rung writes for the mirrored verdict runs it on tf-keras,
    # on 2 logical CPU devices
    p = rung("profile", str(workload), "--steps", "4", "--warmup", "1", "--no-replica-check", "--json")
    assert p.returncode == 0, p.stderr[-800:]
    prof = json.loads(p.stdout)
    assert prof[field] and prof[field.replace("inputs", "input_details")] == details
    assert {k: prof[k] for k in also} == also
    scenario = {"schema": "rung/scenario/v1",
                "workload": {"params": prof["params"], "optimizer": "sgd", "per_device_batch": 32,
                             "step_seconds": 0.05, field: True},
                "hardware": {"device": "custom", "device_memory_gib": 8, "devices_per_host": 2, "max_hosts": 1},
                "goal": {"target_examples_per_second": 1.5 * 32 / 0.05}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    d = json.loads(rung("advise", "--scenario", str(path), "--json").stdout)
    assert d["verdict"] == "mirrored" and code in [w["code"] for w in d["warnings"]]
    r = rung("launch", str(workload), "--scenario", str(path), "--engine", "local", "--steps", "4", "--json",
             "--out", str(tmp_path / "job"))
    assert r.returncode == 0, r.stderr[-1500:]
    out = json.loads(r.stdout)
    assert out["keras"] == "tf_keras" and out["steps_completed"] == 4 and out["examples_per_second"] > 0
    assert 'os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")' in (tmp_path / "job" / "train.py").read_text()


def test_init_warns_that_parameter_servers_run_an_xla_model_without_xla(tmp_path):
    """compile(jit_compile=True) under parameter servers: train.py turns XLA off (a worker's
    XLA step cannot read the ps tasks' variables). init says so before anything runs, with
    the line, and only for that strategy; it reads the file, it does not import it."""
    xla = HERE / "xla.py"
    r = rung("init", str(xla), "--strategy", "parameter_server", "--out", str(tmp_path / "ps"))
    assert r.returncode == 0, r.stderr
    assert "warning: JIT_COMPILE" in r.stderr and "compile(jit_compile=True) (line 9)" in r.stderr
    assert "JIT_COMPILE" in (tmp_path / "ps" / "README.md").read_text()
    r = rung("init", str(xla), "--strategy", "multi_worker_mirrored", "--out", str(tmp_path / "mw"))
    assert r.returncode == 0 and "JIT_COMPILE" not in r.stderr + (tmp_path / "mw" / "README.md").read_text()
    r = rung("init", str(MLP), "--strategy", "parameter_server", "--out", str(tmp_path / "mlp"))
    assert r.returncode == 0 and "JIT_COMPILE" not in r.stderr


def test_init_warns_that_parameter_servers_refuse_a_mixed_float16_model(tmp_path):
    """set_global_policy("mixed_float16") under parameter servers: tf-keras refuses the
    policy there, and train.py stops on it. init says so before anything runs, with the
    line, for that strategy alone; it reads the file, it does not import it."""
    mixed = HERE.parent / "measure" / "workloads" / "mixed16.py"
    r = rung("init", str(mixed), "--strategy", "parameter_server", "--out", str(tmp_path / "ps"))
    assert r.returncode == 0, r.stderr
    assert "warning: STRATEGY_FAILS (the file calls set_global_policy('mixed_float16') (line 10)): the model uses " \
           "the mixed_float16 policy" in r.stderr
    assert "mixed_bfloat16" in (tmp_path / "ps" / "README.md").read_text()
    r = rung("init", str(mixed), "--strategy", "multi_worker_mirrored", "--out", str(tmp_path / "mw"))
    assert r.returncode == 0 and "mixed_float16" not in r.stderr + (tmp_path / "mw" / "README.md").read_text()
    # from a scenario whose profile read the policy (workload.mixed_precision_policy)
    from rung.launch.emit import Job, notes

    [said] = [n for n in notes(Job("parameter_server", workers=2, ps_tasks=1, mixed_float16=True))
              if "mixed_float16" in n]
    assert said.startswith("STRATEGY_FAILS (the profile read the policy): the model uses the mixed_float16 policy")
    assert not any("mixed_float16" in n for n in notes(Job("mirrored", mixed_float16=True)))


def test_init_from_a_scenario_whose_profile_measured_xla_warns_for_parameter_servers(tmp_path):
    # the profile records compile(jit_compile=True) in the scenario; a file that sets it
    # from a variable has no literal to read, and the scenario still says so
    from tests.conftest import BUNDLED

    s = yaml.safe_load((BUNDLED / "06-preemptible-fleet.yaml").read_text())
    s["workload"]["jit_compile"] = True
    path = tmp_path / "xla.yaml"
    path.write_text(yaml.safe_dump(s))
    r = rung("init", str(MLP), "--scenario", str(path), "--out", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    assert "parameter_server" in r.stdout and "warning: JIT_COMPILE" in r.stderr and "the profile measured it" in r.stderr


@pytest.mark.tf
def test_a_model_that_runs_eagerly_trains_with_a_graph_under_parameter_servers(tmp_path):
    """compile(run_eagerly=True): tf-keras refuses it under ParameterServerStrategy (the chief
    failed: "`run_eagerly` is not supported"). init warns for every strategy, with the line;
    train.py turns it off under parameter servers, says so, and trains."""
    eager = HERE / "eager.py"
    for strategy, then in (("parameter_server", "train.py turns it off"), ("multi_worker_mirrored", "remove it")):
        r = rung("init", str(eager), "--strategy", strategy, "--out", str(tmp_path / strategy))
        assert r.returncode == 0, r.stderr
        assert "warning: RUN_EAGERLY" in r.stderr and "compile(run_eagerly=True) (line 10)" in r.stderr
        assert then in r.stderr and "RUN_EAGERLY" in (tmp_path / strategy / "README.md").read_text()
    assert "RUN_EAGERLY" not in rung("init", str(MLP), "--strategy", "parameter_server",
                                     "--out", str(tmp_path / "mlp")).stderr
    r = launch("--strategy", "parameter_server", "--workers", "2", "--engine", "local", "--steps", "4", workload=eager)
    assert r["steps_completed"] == 4
    assert r["notes"] == ["run_eagerly=True turned off: parameter-server training runs each step as a graph function "
                          "on the workers", PS_UNSHARDED]


@pytest.mark.tf
def test_a_pipeline_that_runs_python_stops_parameter_servers_in_one_line(tmp_path):
    """Dataset.from_generator under parameter servers: the generator runs in the chief alone,
    and the chief trained every step and then never exited (a 2-epoch launch of this model
    and the same with an LSTM hung until killed, TF 2.21). init warns, with the call's line;
    train.py stops before training, exit 2, one line; multi-worker's train.py has no such
    check."""
    gen = HERE / "generator.py"
    r = rung("init", str(gen), "--strategy", "parameter_server", "--out", str(tmp_path / "ps"))
    assert r.returncode == 0 and "warning: PYTHON_PIPELINE (the file calls from_generator (line 23))" in r.stderr
    r = rung("init", str(gen), "--strategy", "multi_worker_mirrored", "--out", str(tmp_path / "mw"))
    assert r.returncode == 0 and "PYTHON_PIPELINE" not in r.stderr
    assert "without_python_input(tf, workload, args)" in (tmp_path / "ps" / "train.py").read_text()
    assert "without_python_input" not in (tmp_path / "mw" / "train.py").read_text()
    r = rung("launch", str(gen), "--strategy", "parameter_server", "--workers", "1", "--engine", "local",
             "--steps", "3", timeout=300)  # the chief stops: one worker does (each costs an import)
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "runs only in the coordinator's process" in r.stderr and "generator.py" in r.stderr


@pytest.mark.tf
@pytest.mark.parametrize("strategy", ["single_device", "multi_worker_mirrored"])
def test_a_model_not_compiled_stops_train_py_in_one_line(tmp_path, strategy):
    """rung profile refused it in one line; launch said "worker:0 exited with code 1" and the
    tail of Keras's traceback ("You must compile your model before training/testing")."""
    path = tmp_path / "uncompiled.py"
    path.write_text(TINY_BUILD_MODEL.replace('    model.compile("sgd", "mse")\n', "") + textwrap.dedent("""
        def make_dataset(batch_size, input_context=None):
            return tf.data.Dataset.from_tensor_slices((tf.ones((8, 4)), tf.ones((8, 1)))).repeat().batch(batch_size)
        """))
    assert "compile" not in path.read_text()
    r = rung("launch", str(path), "--strategy", strategy, "--workers", "2", "--engine", "local", "--steps", "3",
             timeout=300)
    assert r.returncode == 2 and r.stdout == "", r.stderr[-1500:]
    assert r.stderr.strip() == (f"rung: error: {path}: build_model() returned a model that is not compiled; call "
                                "model.compile(optimizer=..., loss=...) before returning it")


@pytest.mark.tf
def test_a_make_dataset_whose_input_context_has_no_default_trains_on_one_host(tmp_path):
    """`def make_dataset(batch_size, input_context)`, as TensorFlow's guides write a
    dataset_fn: rung profile passed it None, but train.py called make_dataset(global_batch)
    under MirroredStrategy and stopped on "missing 1 required positional argument:
    'input_context'" (a traceback). It now gets None there, as workload v1's default."""
    path = tmp_path / "required.py"
    path.write_text(TINY_BUILD_MODEL + textwrap.dedent("""
        def make_dataset(batch_size, input_context):
            assert input_context is None, input_context  # one host: one pipeline
            return tf.data.Dataset.from_tensor_slices((tf.ones((8, 4)), tf.ones((8, 1)))).repeat().batch(batch_size)
        """))
    r = launch("--strategy", "mirrored", "--engine", "local", "--steps", "3", "--out", str(tmp_path / "job"),
               workload=path)
    assert r["steps_completed"] == 3 and r["notes"] == []


@pytest.mark.tf
def test_a_make_dataset_that_returns_arrays_stops_train_py_in_one_line(tmp_path):
    """Arrays, not a tf.data.Dataset: rung profile refused it in one line; launch said
    "worker:0 exited with code 1" and TensorFlow's "'tuple' object has no attribute
    'element_spec'"."""
    path = tmp_path / "arrays.py"
    path.write_text(TINY_BUILD_MODEL + textwrap.dedent("""
        def make_dataset(batch_size, input_context=None):
            return tf.ones((64, 4)).numpy(), tf.ones((64, 1)).numpy()
        """))
    r = rung("launch", str(path), "--strategy", "multi_worker_mirrored", "--workers", "2", "--engine", "local",
             "--steps", "3", timeout=300)
    assert r.returncode == 2 and r.stdout == "", r.stderr[-1500:]
    assert r.stderr.strip() == (f"rung: error: {path}: make_dataset(32) returned tuple; expected a tf.data.Dataset "
                                "of (features, labels) batches: wrap the arrays, "
                                "tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)")


@pytest.mark.tf
def test_workers_reading_the_same_batches_are_told_at_train_time(tmp_path, monkeypatch):
    """A team that never ran rung profile: make_dataset takes the InputContext and ignores
    it, and shuffles nothing, so both workers train on the same batches. Worker 0's train.py
    says so before training (as rung profile's INPUT_NOT_SHARDED) and trains; sharded by the
    context, nothing is said. The check says how long it took when that passes a line
    (5 s by default; 0 here, so this quick one says it), and RUNG_INPUT_CHECK=0 skips it."""
    def workload(shard: str) -> Path:
        path = tmp_path / f"same{len(shard)}.py"
        path.write_text(TINY_BUILD_MODEL + textwrap.dedent("""
            def make_dataset(batch_size, input_context=None):
                x = tf.reshape(tf.range(256, dtype=tf.float32), (64, 4))
                ds = tf.data.Dataset.from_tensor_slices((x, tf.ones((64, 1))))
            """) + shard + "    return ds.repeat().batch(batch_size)\n")
        return path

    args = ("--strategy", "multi_worker_mirrored", "--workers", "2", "--engine", "local", "--steps", "3")
    monkeypatch.setenv("RUNG_INPUT_CHECK_SAID", "0")
    r = launch(*args, workload=workload(""))
    assert r["steps_completed"] == 3
    said, took = r["notes"]
    assert said == ("INPUT_NOT_SHARDED: under multi-worker make_dataset takes the InputContext and does not use "
                    "it, and draws nothing at random: every worker reads the same batches in the same order, so N "
                    "workers compute one worker's gradient N times; shard it: ds.shard(input_context.num_input_"
                    "pipelines, input_context.input_pipeline_id)")
    assert took.startswith("the check of what the workers read took ") and "RUNG_INPUT_CHECK=0 skips it" in took
    monkeypatch.setenv("RUNG_INPUT_CHECK", "0")
    r = launch(*args, workload=workload(""))
    assert r["steps_completed"] == 3 and r["notes"] == []
    monkeypatch.delenv("RUNG_INPUT_CHECK")
    monkeypatch.delenv("RUNG_INPUT_CHECK_SAID")
    r = launch(*args, workload=workload(
        "    ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)\n"))
    assert r["steps_completed"] == 3 and r["notes"] == []


@pytest.mark.tf
def test_a_dataset_made_at_import_stops_parameter_servers_in_one_line(tmp_path):
    """keras.io's FeatureSpace example makes its table dataset when the file is imported:
    under parameter servers the workers cannot receive it. train.py stops before training,
    exit 2, one line saying what to change; a job whose scenario says so (the profile found
    it) makes init warn, under parameter servers only."""
    fs = HERE.parent / "bench" / "featurespace.py"
    r = rung("launch", str(fs), "--strategy", "parameter_server", "--workers", "1", "--engine", "local",
             "--steps", "3", "--out", str(tmp_path / "ps"), timeout=300)  # the chief stops: one worker does
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr[-1500:]
    assert "featurespace.py: make_dataset builds on a tf.data.Dataset made outside it" in r.stderr
    from rung.launch.emit import Job, notes

    job = Job("parameter_server", workers=2, captured_dataset=True)
    assert any(n.startswith("CAPTURED_DATASET (the profile found it): make_dataset builds on") for n in notes(job))
    assert not any("CAPTURED_DATASET" in n for n in notes(Job("multi_worker_mirrored", workers=2,
                                                                captured_dataset=True)))


def test_parameter_server_workers_read_the_coordinators_pipeline_as_the_profile_says(tmp_path):
    # the oracle of rung.measure.pipeline.ps_worker_input: in a real 2-worker parameter-server
    # launch, a stream sharded by the InputContext is the same on both workers (make_dataset
    # ran once, with a context of one pipeline), an unseeded shuffle is each worker's own, and
    # so are a random layer's flips of the same elements; a stateless draw keyed by the element
    # is the same on both (the profile called it "augmented" once)
    import re

    import tensorflow as tf

    from rung.measure.pipeline import ps_worker_input
    from tests.launch import ps_streams

    r = rung("launch", str(HERE / "ps_streams.py"), "--strategy", "parameter_server", "--workers", "2",
             "--engine", "local", "--steps", "48", "--batch", "4", "--out", str(tmp_path / "job"))
    assert r.returncode == 0, r.stderr[-1500:]
    streams = []
    for i in (0, 1):
        log = (tmp_path / "job" / "run" / f"worker{i}-a0.log").read_text()
        found = re.findall(r"PLAIN (\d+) SHUFFLED (\d+) FLIPPED (\d+) KEYED (\d+)", log)[:32]
        # as many as the worker made before the job ended: a CI launch of 8 steps once left a
        # worker 7 (the coordinator gave the other most steps); 48 steps keep both pipelines busy
        assert len(found) >= 12, log[-1500:]
        streams.append(found)
    n = min(len(s) for s in streams)
    streams = [s[:n] for s in streams]
    assert [p for p, _, _, _ in streams[0]] == [p for p, _, _, _ in streams[1]] == [str(i) for i in range(n)]
    assert [s for _, s, _, _ in streams[0]] != [s for _, s, _, _ in streams[1]]
    assert [k for *_, k in streams[0]] == [k for *_, k in streams[1]]
    assert len({k for *_, k in streams[0]}) > 1  # drawn: not one value
    # every flip is one of the element's two (8p + 4 as it is, 8p + 2 flipped), and the two
    # workers' n (12 or more) differ (by chance alike once in 4,096 launches at most)
    assert all(int(f) in (8 * int(p) + 2, 8 * int(p) + 4) for stream in streams for p, _, f, _ in stream)
    assert [f for _, _, f, _ in streams[0]] != [f for _, _, f, _ in streams[1]]
    assert ps_worker_input(tf, ps_streams.make_dataset, 4)[0] == "own_order"  # it shuffles without a seed
    assert ps_worker_input(tf, ps_streams.plain_stream, 4)[0] == "identical"  # its plain half alone
    assert ps_worker_input(tf, ps_streams.augmented_stream, 4)[0] == "augmented"  # its flips alone
    assert ps_worker_input(tf, ps_streams.keyed_stream, 4)[0] == "identical"  # its keyed draws alone


def test_a_batch_divided_by_the_replicas_is_warned_at_init_and_counted_as_trained(tmp_path):
    # TensorFlow's multi-worker tutorial: make_dataset(batch) divides it by the replicas,
    # where train.py passes the per-replica batch. init reads the call from the text, before
    # anything runs; train.py says it and counts the batch that trained (before, a 2-worker
    # launch at --batch 64 trained 32 a replica and counted 64)
    tutorial = HERE / "tutorial_batch.py"
    r = rung("init", str(tutorial), "--strategy", "multi_worker_mirrored", "--workers", "4", "--batch", "64",
             "--out", str(tmp_path / "mw"))
    line = next(x for x in r.stderr.splitlines() if "BATCH_DIVIDED" in x)
    assert r.returncode == 0 and "get_per_replica_batch_size (line 18)" in line
    assert "4 replicas" in line and "16 examples a step while train.py counts 64" in line
    assert "BATCH_DIVIDED" in (tmp_path / "mw" / "README.md").read_text()
    for strategy in ("mirrored", "parameter_server"):  # no context of several replicas (1 device a worker)
        r = rung("init", str(tutorial), "--strategy", strategy, "--out", str(tmp_path / strategy))
        assert r.returncode == 0 and "BATCH_DIVIDED" not in r.stderr
    r = rung("launch", str(tutorial), "--strategy", "multi_worker_mirrored", "--workers", "2", "--batch", "64",
             "--engine", "local", "--steps", "3", "--json", "--out", str(tmp_path / "job"))
    assert r.returncode == 0, r.stderr[-1500:]
    [note] = [n for n in json.loads(r.stdout)["notes"] if n.startswith("BATCH_DIVIDED")]
    assert "make_dataset(64, ...) batches by 32" in note and "examples per second count the 32 it makes" in note
    log = (tmp_path / "job" / "run" / "worker0-a0.log").read_text().splitlines()
    report = json.loads(next(x for x in reversed(log) if x.startswith('{"step"')))
    assert report["global_batch"] == 2 * 32  # what the 2 replicas took a step, not 2 x 64


def test_a_stateful_rnn_is_warned_where_train_py_runs_on_tf_keras(tmp_path):
    # tf-keras builds no stateful RNN under a strategy (multi-worker, parameter servers, a
    # mirrored model Keras 3 cannot fit); Keras 3 builds it mirrored and on one device
    stateful = HERE.parent / "measure" / "workloads" / "stateful.py"
    r = rung("init", str(stateful), "--strategy", "parameter_server", "--out", str(tmp_path / "ps"))
    assert r.returncode == 0 and "warning: STATEFUL_RNN (the file calls GRU(stateful=True) (line 12))" in r.stderr
    assert "STATEFUL_RNN" in (tmp_path / "ps" / "README.md").read_text()
    r = rung("init", str(stateful), "--strategy", "mirrored", "--out", str(tmp_path / "mirrored"))
    assert r.returncode == 0 and "STATEFUL_RNN" not in r.stderr
    from rung.launch.emit import Job, notes

    counted = Job("mirrored", stateful_rnn=True, string_inputs=True)  # a scenario's count; tf-keras for the strings
    assert any(n.startswith("STATEFUL_RNN (the profile counted them): train.py runs mirrored") for n in notes(counted))
    assert not any("STATEFUL_RNN" in n for n in notes(Job("mirrored", stateful_rnn=True)))


def test_an_optimizer_that_accumulates_is_warned_by_init_where_train_py_replicates():
    from rung.launch.emit import Job, notes

    read = Job("mirrored", accumulation_calls=["Adam(gradient_accumulation_steps=4) (line 7)"])
    [note] = [n for n in notes(read) if n.startswith("GRADIENT_ACCUMULATION")]
    assert "Adam(gradient_accumulation_steps=4) (line 7)" in note and "keras-team/keras#20582" in note
    assert any(n.startswith("GRADIENT_ACCUMULATION (the profile read it): train.py runs parameter_server")
               for n in notes(Job("parameter_server", workers=2, ps_tasks=1, accumulates=True)))
    assert not any("GRADIENT_ACCUMULATION" in n for n in notes(Job("single_device", accumulates=True)))


def test_an_optimizer_that_clips_runs_mirrored_on_tf_keras_or_is_warned_on_keras_3(tmp_path):
    """CLIPPING_PER_REPLICA: a file on tf.keras whose optimizer clips runs mirrored on
    tf-keras, which clips the sum; a file of Keras 3's own stays there, and init says what to
    scale. One device and parameter servers (each worker applies its own) say nothing."""
    from rung.launch.emit import Job, notes

    body = ("\n\ndef build_model():\n    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])\n"
            "    m.compile(optimizer=keras.optimizers.Adam(clipnorm=1.0), loss='mse')\n    return m\n\n\n"
            "def make_dataset(batch_size):\n    import tensorflow as tf\n"
            "    return tf.data.Dataset.from_tensors(([[0.0] * 4], [0.0])).repeat().batch(batch_size)\n")
    for head, legacy in (("from tensorflow import keras", True), ("import keras", False)):
        (tmp_path / "w.py").write_text(head + body)
        out = tmp_path / ("tfk" if legacy else "k3")
        r = rung("init", str(tmp_path / "w.py"), "--strategy", "mirrored", "--out", str(out))
        assert r.returncode == 0, r.stderr
        train = (out / "train.py").read_text()
        assert ('os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")' in train) == legacy
        said = [line for line in r.stderr.splitlines() if "CLIPPING_PER_REPLICA" in line]
        if legacy:
            assert not said and "clips each replica's share" in (out / "README.md").read_text()
        else:
            [line] = said
            assert "Adam(clipnorm=1.0) (line 5)" in line and "Divide the threshold by the number of replicas" in line
    assert not any("CLIPPING" in n for n in notes(Job("single_device", gradient_clipping="clipnorm=1")))
    assert not any("CLIPPING" in n for n in notes(Job("parameter_server", workers=2, ps_tasks=1,
                                                      gradient_clipping="clipnorm=1")))
    assert Job("mirrored", gradient_clipping="clipnorm=1").legacy_keras
    assert not Job("mirrored", gradient_clipping="clipnorm=1", keras_asked="keras3").legacy_keras


def test_a_train_step_that_clips_is_warned_by_init_where_replicas_are_summed():
    from rung.launch.emit import Job, notes

    calls = ["Clipped.train_step: tf.clip_by_global_norm (line 20)"]
    for job in (Job("mirrored", step_clipping_calls=calls), Job("multi_worker_mirrored", workers=2,
                                                                 step_clipping=calls[0])):
        [note] = [n for n in notes(job) if n.startswith("CLIPPING_PER_REPLICA")]
        assert calls[0] in note and "global_clipnorm" in note
    for job in (Job("single_device", step_clipping_calls=calls),
                Job("parameter_server", workers=2, ps_tasks=1, step_clipping_calls=calls)):
        assert not any("CLIPPING" in n for n in notes(job))
    [note] = [n for n in notes(Job("mirrored", step_clipping_calls=calls, loss_scaled_for_replicas=False))
              if n.startswith("LOSS_NOT_SCALED")]
    assert "clipping alone gives that" in note


def test_a_compiled_loss_of_the_files_own_is_said_by_init_where_keras_3_sums_replicas():
    """Keras 3 leaves a compiled loss that returns one number undivided across replicas
    (tf-keras divides it): init says so for a mirrored job on Keras 3, unchecked or checked,
    and says nothing where train.py runs on tf-keras or nothing is summed."""
    from rung.launch.emit import Job, notes, train_time_warnings

    calls = ["compile(loss=smooth_l1) (line 25)"]
    [note] = [n for n in notes(Job("mirrored", compiled_loss_calls=calls)) if "compiles a loss of its own" in n]
    assert calls[0] in note and "rung launch" in note and "per-example losses" in note
    for job in (Job("multi_worker_mirrored", workers=2, compiled_loss_calls=calls),  # tf-keras
                Job("mirrored", compiled_loss_calls=calls, keras_asked="tf_keras"),
                Job("single_device", compiled_loss_calls=calls)):
        assert not any("loss of its own" in n or "LOSS_NOT_SCALED" in n for n in notes(job)), job.verdict
    found = Job("mirrored", compiled_loss_calls=calls, loss_scaled_for_replicas=False,
                compiled_loss_not_scaled="smooth_l1", loss_checked_by="the scenario says so")
    [warned] = train_time_warnings(found)
    assert warned.startswith("LOSS_NOT_SCALED") and "the compiled loss smooth_l1 returns one number" in warned
    found.keras_asked = "tf_keras"
    assert train_time_warnings(found) == []


def test_init_takes_the_files_batch_size_as_profile_and_bench_do(tmp_path):
    """Without a scenario or --batch, train.py was written for 32 examples a replica whatever
    the file's BATCH_SIZE (rung profile and rung bench take it); now BATCH_SIZE, and one rung
    cannot read without running the file is bad input naming --batch."""
    source = MLP.read_text()
    mine = tmp_path / "mine.py"
    mine.write_text(source + "\nBATCH_SIZE = 16 * 8\n")
    r = rung("init", str(mine), "--strategy", "mirrored", "--out", str(tmp_path / "job"))
    assert r.returncode == 0, r.stderr
    assert "PER_REPLICA_BATCH = 128\n" in (tmp_path / "job" / "train.py").read_text()
    r = rung("init", str(mine), "--strategy", "mirrored", "--batch", "8", "--out", str(tmp_path / "job8"))
    assert r.returncode == 0 and "PER_REPLICA_BATCH = 8\n" in (tmp_path / "job8" / "train.py").read_text()
    mine.write_text(source + "\nimport os\nBATCH_SIZE = int(os.environ.get('BS', 64))\n")
    r = rung("init", str(mine), "--strategy", "mirrored", "--out", str(tmp_path / "job2"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "job2").exists()
    assert "is not a whole number rung can read without running the file: give --batch N" in r.stderr


def test_a_loss_made_to_sum_is_said_by_init_on_either_keras():
    """A loss made with reduction="sum" sums on either Keras: init says what would check it
    (the text alone cannot tell a compiled loss from one a train_step divides itself), and
    once checked says LOSS_NOT_SCALED on tf-keras too; nothing where nothing is summed."""
    from rung.launch.emit import Job, notes, train_time_warnings

    calls = ["MeanSquaredError(reduction='sum') (line 17)"]
    for job in (Job("mirrored", summed_loss_calls=calls),
                Job("multi_worker_mirrored", workers=2, summed_loss_calls=calls)):  # tf-keras
        [note] = [n for n in notes(job) if "sums over the batch" in n]
        assert calls[0] in note and "rung launch" in note and "on either Keras" in note
    assert not any("sums over the batch" in n for n in notes(Job("single_device", summed_loss_calls=calls)))
    # a train_step of the file's own: its own words (it likely divides the sum itself)
    assert not any("sums over the batch" in n for n in notes(
        Job("mirrored", summed_loss_calls=calls, own_step_defs=["GAN.train_step (line 30)"])))
    found = Job("multi_worker_mirrored", workers=2, summed_loss_calls=calls, loss_scaled_for_replicas=False,
                compiled_loss_sums="MeanSquaredError(reduction='sum')", loss_checked_by="the scenario says so")
    [warned] = train_time_warnings(found)
    assert warned.startswith("LOSS_NOT_SCALED") and "2 times one device's step" in warned


def test_a_metric_set_with_assign_is_said_by_init_where_replicas_are_summed():
    from rung.launch.emit import Job, notes

    calls = ["MaxError.update_state: self.top.assign (line 18)"]
    for job in (Job("mirrored", assigning_metric_calls=calls),
                Job("multi_worker_mirrored", workers=2, assigning_metrics=calls[0])):
        [note] = [n for n in notes(job) if n.startswith("METRIC_SUMMED")]
        assert calls[0] in note and "EarlyStopping" in note
    for job in (Job("single_device", assigning_metric_calls=calls),
                Job("parameter_server", workers=2, ps_tasks=1, assigning_metric_calls=calls)):
        assert not any(n.startswith("METRIC_SUMMED") for n in notes(job))


def test_launch_checks_a_compiled_loss_of_the_files_own_on_keras_3():
    """A loss function that returns its own tf.reduce_mean, compiled into a model on Keras's
    train_step: rung launch runs the replica check for it (before, no model on Keras's own
    step was checked) and says LOSS_NOT_SCALED, naming the loss, before training."""
    path = HERE.parent / "measure" / "workloads" / "scalar_loss.py"
    r = rung("launch", str(path), "--strategy", "mirrored", "--engine", "local", "--steps", "3", "--json")
    assert r.returncode == 0, r.stderr[-1500:]
    assert "checking that Keras 3 divides the model's own compiled loss (compile(loss=smooth_l1)" in r.stderr
    [warned] = [x for x in r.stderr.splitlines() if x.startswith("rung launch: warning: LOSS_NOT_SCALED")]
    assert "were 2.00x one device's" in warned and "the compiled loss smooth_l1 returns one number" in warned
    assert json.loads(r.stdout)["steps_completed"] == 3


@pytest.mark.tf
def test_launch_checks_a_compiled_loss_made_to_sum_on_tf_keras():
    """MeanSquaredError(reduction="sum") on tf-keras (mirrored, one process: a multi-worker
    launch runs the same check before its tasks start): rung launch reads the reduction in
    the text, runs the replica check, and says LOSS_NOT_SCALED before training (tf-keras
    sums it as Keras 3 does: 2.00x)."""
    path = HERE.parent / "measure" / "workloads" / "summed_loss.py"
    r = rung("launch", str(path), "--strategy", "mirrored", "--keras", "tf_keras", "--engine", "local",
             "--steps", "3", "--json")
    assert r.returncode == 0, r.stderr[-1500:]
    assert "checking that the model's compiled loss averages over the batch (MeanSquaredError(reduction='sum')" \
        in r.stderr
    [warned] = [x for x in r.stderr.splitlines() if x.startswith("rung launch: warning: LOSS_NOT_SCALED")]
    assert "were 2.00x one device's" in warned and "MeanSquaredError(reduction='sum') sums over the batch" in warned
    assert json.loads(r.stdout)["steps_completed"] == 3


def test_a_step_that_logs_its_replicas_share_is_said_by_init_where_replicas_are_summed():
    from rung.launch.emit import Job, notes

    [note] = [n for n in notes(Job("multi_worker_mirrored", workers=4, logged_loss_divided=True))
              if n.startswith("LOGGED_LOSS_DIVIDED")]
    assert "1/4 of the loss one device shows" in note and "num_replicas_in_sync" in note
    assert any(n.startswith("LOGGED_LOSS_DIVIDED") for n in notes(
        Job("multi_worker_mirrored", workers=4, logged_loss_divided=True, logged_loss_keras="tf_keras")))
    for job in (Job("single_device", logged_loss_divided=True), Job("mirrored", logged_loss_divided=False),
                Job("parameter_server", workers=2, ps_tasks=1, logged_loss_divided=True),
                Job("multi_worker_mirrored", workers=4, logged_loss_divided=True, logged_loss_keras="keras3")):
        assert not any("LOGGED_LOSS" in n for n in notes(job))


@pytest.mark.tf
def test_train_py_where_rung_is_not_installed_trains_and_says_what_it_did_not_check(tmp_path):
    # a cluster's image often has TensorFlow and not rung: train.py's checks (TF_CONFIG, the
    # pipeline) are skipped there, and it says so instead of saying nothing
    r = rung("init", str(MLP), "--strategy", "single_device", "--out", str(tmp_path / "one"))
    assert r.returncode == 0, r.stderr
    without_rung = ("import runpy, sys; sys.modules['rung'] = None; sys.argv = ['train.py', '--steps', '2']; "
                    "runpy.run_path('train.py', run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", without_rung], cwd=tmp_path / "one", capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-1500:]
    [line] = [x for x in r.stderr.splitlines() if x.startswith("train.py: rung is not installed")]
    assert "TF_CONFIG and the input pipeline are not checked" in line


def test_a_loss_not_divided_across_replicas_is_said_where_gradients_are_summed(tmp_path):
    """LOSS_NOT_SCALED, known from the scenario (or rung launch's check), is said by init, its
    README and, before every run, train.py itself: N replicas' gradients summed, each update
    N times one device's, with N the plan's. Parameter servers and one device sum nothing."""
    import ast

    from rung.launch.emit import Job, loss_not_scaled_note, train_py

    def note(*args, **kw):
        return loss_not_scaled_note(Job(*args, **kw))

    said = "rung launch's check: 2.00x"
    four = note("mirrored", devices_per_host=4, loss_scaled_for_replicas=False, loss_checked_by=said)
    assert four.startswith(f"LOSS_NOT_SCALED ({said}): ") and "sums the gradients of its 4 replicas, so every " \
        "update is 4 times what one device takes" in four and "tf.nn.compute_average_loss" in four
    six = note("multi_worker_mirrored", workers=3, devices_per_host=2, loss_scaled_for_replicas=False)
    assert "MultiWorkerMirroredStrategy sums the gradients of its 6 replicas" in six and "(the scenario says so)" in six
    assert "under N replicas every update is N times" in note("mirrored", loss_scaled_for_replicas=False)
    assert note("parameter_server", workers=2, ps_tasks=1, loss_scaled_for_replicas=False) is None
    assert note("single_device", loss_scaled_for_replicas=False) is None
    assert note("mirrored", devices_per_host=4, loss_scaled_for_replicas=True, own_step_defs=["M.train_step (line 3)"]) \
        is None
    # a model with its own step that nobody checked: what checks it, unless that was turned off
    unknown = note("mirrored", own_step_defs=["M.train_step (line 3)"])
    assert "own step (M.train_step (line 3))" in unknown and "is not known (rung init runs nothing)" in unknown
    assert note("mirrored", own_step_defs=["M.train_step (line 3)"], loss_check_quiet=True) is None
    assert note("mirrored") is None
    # train.py's own words: the same line, kept whole across the literals it is cut into
    workload = tmp_path / "w.py"
    for job, expected in ((Job("mirrored", devices_per_host=4, loss_scaled_for_replicas=False, loss_checked_by=said),
                           [four]),
                          (Job("mirrored", own_step_defs=["M.train_step (line 3)"]), [])):
        tree = ast.parse(train_py(job, workload))
        [value] = [n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "WARNINGS"]
        assert ast.literal_eval(value) == expected
    # rung init from a profiled scenario that says so
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump({
        "schema": "rung/scenario/v1",
        "workload": {"params": 1.0e6, "optimizer": "adam", "per_device_batch": 32, "step_seconds": 0.1,
                     "loss_scaled_for_replicas": False},
        "hardware": {"device": "A100-80GB", "devices_per_host": 4, "inter_host_gbps": 100, "max_hosts": 2},
        "goal": {"target_examples_per_second": 900}}))
    custom = HERE.parent / "measure" / "workloads" / "custom_step.py"
    r = rung("init", str(custom), "--scenario", str(scenario), "--out", str(tmp_path / "job"))
    assert r.returncode == 0, r.stderr
    assert "rung init: warning: LOSS_NOT_SCALED (the scenario's workload.loss_scaled_for_replicas: false): " \
           "the model's own train_step" in r.stderr and "its 4 replicas" in r.stderr
    assert "LOSS_NOT_SCALED" in (tmp_path / "job" / "README.md").read_text()
    assert "WARNINGS = [\n    (\"LOSS_NOT_SCALED" in (tmp_path / "job" / "train.py").read_text()


def test_launch_says_once_what_it_warned_of_before_training():
    from rung.cli.launch import summary

    r = {"strategy": "mirrored", "engine": "local", "workers": 1, "ps_tasks": 0, "keras": "keras3",
         "steps_completed": 3, "examples_per_second": 10.0, "wall_seconds": 1.0, "notes": ["A: said", "B: new"]}
    assert "note: A: said" in summary(r) and "note: B: new" in summary(r)
    assert "note: A: said" not in summary(r, said=["A: said"]) and "note: B: new" in summary(r, said=["A: said"])


@pytest.mark.tf
def test_launch_checks_a_models_own_step_and_warns_of_a_loss_not_divided_across_replicas():
    """keras.io-style custom train_step with tf.reduce_mean: under 2 replicas the summed
    gradients are 2x one device's. rung launch runs the profile's replica check first (a
    model with Keras's own step is not checked: the kill test below launches one with a
    scaled step of its own), says LOSS_NOT_SCALED before training, and train.py says it too."""
    custom = HERE.parent / "measure" / "workloads" / "custom_step.py"
    r = rung("launch", str(custom), "--strategy", "mirrored", "--engine", "local", "--steps", "3", "--json")
    assert r.returncode == 0, r.stderr[-1500:]
    [warned] = [x for x in r.stderr.splitlines() if x.startswith("rung launch: warning: LOSS_NOT_SCALED")]
    assert "(rung launch's check: the gradients summed under 2 replicas were 2.00x one device's)" in warned
    out = json.loads(r.stdout)
    assert out["steps_completed"] == 3
    assert [n for n in out["notes"] if n.startswith("LOSS_NOT_SCALED")] == [warned.removeprefix("rung launch: warning: ")]


def test_a_model_class_kept_in_a_module_beside_the_workload_is_imported_and_checked(tmp_path):
    """A team's model class in models.py beside the workload file, run from another folder:
    the workload imports it as `python workload.py` would (its folder first on sys.path, in
    rung and in train.py: this failed with ModuleNotFoundError), and its own unscaled
    train_step, read from models.py, is checked before training."""
    (tmp_path / "team").mkdir()
    (tmp_path / "elsewhere").mkdir()
    custom = (HERE.parent / "measure" / "workloads" / "custom_step.py").read_text()
    (tmp_path / "team" / "models.py").write_text(custom)
    (tmp_path / "team" / "workload.py").write_text("from models import build_model, make_dataset\n")
    r = subprocess.run([sys.executable, "-m", "rung", "launch", str(tmp_path / "team" / "workload.py"), "--strategy",
                        "mirrored", "--engine", "local", "--steps", "3", "--json"], capture_output=True, text=True,
                       timeout=600, cwd=tmp_path / "elsewhere")
    assert r.returncode == 0, r.stderr[-1500:]
    assert json.loads(r.stdout)["steps_completed"] == 3
    [warned] = [x for x in r.stderr.splitlines() if x.startswith("rung launch: warning: LOSS_NOT_SCALED")]
    assert "were 2.00x one device's" in warned


def test_a_one_host_plan_runs_on_the_keras_its_step_was_measured_on_or_asked_for(tmp_path):
    """An embedding model with Adagrad took 114 ms a step on Keras 3 and 0.9 ms on tf-keras
    (keras-team/keras#19992): rung advise planned parameter servers on 8 hosts from the first
    and kept it, as one device ran on Keras 3. A one-host plan now runs where its step was
    measured (the scenario's step_keras) or where --keras says; keras3 is refused where the
    plan needs tf-keras."""
    from rung.errors import InputError
    from rung.launch.emit import Job, check_job

    assert Job("single_device", step_keras="tf_keras").legacy_keras
    assert Job("mirrored", step_keras="tf_keras").legacy_keras
    assert not Job("single_device", step_keras="keras3").legacy_keras and not Job("single_device").legacy_keras
    assert Job("single_device", keras_asked="tf_keras").legacy_keras_why == "--keras tf_keras asked for it"
    assert not Job("single_device", step_keras="tf_keras", keras_asked="keras3").legacy_keras
    with pytest.raises(InputError) as e:
        check_job(Job("parameter_server", workers=2, ps_tasks=1, keras_asked="keras3"))
    assert e.value.where == "--keras" and "keras3 cannot run this plan" in e.value.message
    for keras, legacy in (("tf_keras", True), (None, False)):
        out = tmp_path / f"o-{keras}"
        asked = ["--keras", keras] if keras else []
        r = rung("init", str(MLP), "--strategy", "single_device", "--out", str(out), *asked)
        assert r.returncode == 0, r.stderr
        assert ('os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")' in (out / "train.py").read_text()) == legacy
    r = rung("init", str(MLP), "--strategy", "multi_worker_mirrored", "--keras", "keras3", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "--keras: keras3 cannot run this plan" in r.stderr and not (tmp_path / "x").exists()


def test_a_step_that_failed_under_a_strategy_is_warned_by_init_on_that_keras():
    from rung.launch.emit import Job, notes

    why = "a loss inside a custom train_step under a strategy must not average over the batch itself"
    mw = Job("multi_worker_mirrored", workers=2, strategy_failure=why, step_keras="tf_keras")
    [note] = [n for n in notes(mw) if n.startswith("STRATEGY_FAILS")]
    assert why in note and "on tf-keras" in note
    # a mirrored plan whose step was measured on tf-keras runs there, where the failure was seen;
    # asked onto Keras 3, it does not meet it
    assert any("STRATEGY_FAILS" in n for n in notes(Job("mirrored", strategy_failure=why, step_keras="tf_keras")))
    assert not any("STRATEGY_FAILS" in n for n in notes(Job("mirrored", strategy_failure=why, step_keras="tf_keras",
                                                            keras_asked="keras3")))
    assert not any("STRATEGY_FAILS" in n for n in notes(Job("single_device", strategy_failure=why, step_keras="keras3")))
    # a fit that fails under every strategy: one device's plan too, on that Keras alone
    from rung.kerasfit import UNLABELLED_LOSS_PROBLEM as everywhere

    one = Job("single_device", strategy_failure=everywhere, step_keras="keras3", strategy_fails_on_one_device=True)
    [note] = [n for n in notes(one) if n.startswith("STRATEGY_FAILS")]
    assert "under every tf.distribute strategy on keras3, which train.py runs single_device on" in note
    assert not any("STRATEGY_FAILS" in n for n in notes(Job("multi_worker_mirrored", workers=2, step_keras="keras3",
                                                            strategy_failure=everywhere,
                                                            strategy_fails_on_one_device=True)))


def test_init_from_a_decision_that_chose_an_offer_writes_for_the_offers_hardware(tmp_path):
    """A decision that rents the offered hardware: init took the team's hardware (its TPU
    slice from the team's GPU: "a TPU slice"; its devices a host: the team's 1 where the
    offer has 4) and said nothing of the offer."""
    readme = init_readme(tmp_path, {
        "schema": "rung/scenario/v1", "name": "a T4, and a TPU offered",
        "workload": {"params": 25.6e6, "optimizer": "momentum", "per_device_batch": 128, "step_seconds": 0.25},
        "hardware": {"device": "T4", "devices_per_host": 1, "inter_host_gbps": 10, "max_hosts": 1},
        "offers": [{"name": "pod", "usd_per_host_hour": 12.0, "device": "TPU-v4-8", "devices_per_host": 4,
                    "inter_host_gbps": 100, "max_hosts": 4, "step_seconds": 0.05}],
        "goal": {"target_examples_per_second": 5000}}, "o")
    assert "tpu on its offer pod (4 x TPU-v4-8 a host)" in readme
    assert "on a TPU-v4-8 slice (1 host of 4 devices" in readme


@pytest.mark.parametrize("plan,tasks", [(["parameter_server", "--workers", "3", "--ps-tasks", "2"], 6),
                                        (["multi_worker_mirrored", "--workers", "12"], 12)])
def test_the_readmes_tf_config_command_runs_and_names_every_task(tmp_path, plan, tasks):
    """The README said "`rung tf-config --all` prints them", which tf-config refuses
    (--strategy and --workers are required). It now gives the whole command with the job's
    tasks (a long list as seq writes it); run here by the shell, as a reader pastes it."""
    r = rung("init", str(MLP), "--strategy", *plan, "--out", str(tmp_path / "job"))
    assert r.returncode == 0, r.stderr
    readme = (tmp_path / "job" / "README.md").read_text()
    [command] = [line.strip() for line in readme.splitlines() if line.strip().startswith("rung tf-config")]
    assert f"rung launch {MLP} --strategy {plan[0]}" in readme  # the workload's own path, not WORKLOAD.py
    out = subprocess.run(["bash", "-c", f"{sys.executable} -m {command}"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    workers = int(plan[plan.index("--workers") + 1])
    assert len(lines) == tasks and sum(x["task"].startswith("worker:") for x in lines) == workers


def ray_node(node_id: str, gpus: int = 0, alive: bool = True) -> dict:
    """One entry of `ray.nodes()`, the fields launch_ray.py reads."""
    return {"NodeID": node_id, "Alive": alive, "Resources": {"CPU": 8.0, **({"GPU": float(gpus)} if gpus else {})}}


def test_launch_ray_places_parameter_server_workers_on_gpu_nodes_and_ps_tasks_on_cpu_hosts(tmp_path, monkeypatch):
    # Ray's round robin put worker 0 of a --use-gpu job on a cluster's head (the usual
    # head has no GPU: that worker trained on a CPU) and asked no GPU for any worker. The
    # expected placements below are worked out by hand from the rule launch_ray.py states
    import importlib.util

    r = rung("init", str(MLP), "--strategy", "parameter_server", "--workers", "2", "--ps-tasks", "1",
             "--out", str(tmp_path / "ps"))
    assert r.returncode == 0, r.stderr
    monkeypatch.setattr(os, "environ", dict(os.environ))  # launch_ray.py sets its ENV when imported
    spec = importlib.util.spec_from_file_location("launch_ray_under_test", tmp_path / "ps" / "launch_ray.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    place = module.placement
    w, p = ("worker", 0), ("ps", 0)
    # a CPU head (the driver's node) and two GPU nodes: a worker on each GPU node, the ps task
    # on the head, beside the coordinator
    cluster = [ray_node("head"), ray_node("g1", 4), ray_node("g2", 4)]
    assert place(cluster, 2, 1, 1, "head") == {w: "g1", ("worker", 1): "g2", p: "head"}
    # four GPUs a worker: one worker a node of 4
    assert place(cluster, 2, 1, 4, "head") == {w: "g1", ("worker", 1): "g2", p: "head"}
    # three workers of 4 GPUs on two nodes of 4: more than the cluster has, one line
    with pytest.raises(SystemExit, match=r"^launch_ray.py: 3 worker\(s\) of 4 GPU\(s\) each do not fit the "
                                         r"cluster's live nodes \(GPUs: 0, 4, 4\); --gpus-per-worker 0 runs them "
                                         r"on CPUs$"):
        place(cluster, 3, 1, 4, "head")
    # a GPU node of 2 GPUs and one of 1: three workers fill them; a dead node counts for nothing
    got = place([ray_node("head"), ray_node("g1", 2), ray_node("g2", 1), ray_node("gone", 8, alive=False)],
                3, 2, 1, "head")
    assert sorted(n for (kind, _), n in got.items() if kind == "worker") == ["g1", "g1", "g2"]
    assert got[p] == got[("ps", 1)] == "head"
    # every node alike, no GPUs asked for: the workers start away from the driver's node, and
    # the ps tasks go beside the fewest workers, ties in that order (two nodes: the first)
    assert place([ray_node("a"), ray_node("b")], 2, 1, 0, "a") == {w: "b", ("worker", 1): "a", p: "b"}
    assert place([ray_node("a"), ray_node("b"), ray_node("c")], 2, 2, 0, "a") == \
        {w: "b", ("worker", 1): "c", p: "a", ("ps", 1): "a"}
    # one node: everything there, as a local instance runs it
    assert set(place([ray_node("local")], 2, 1, 0, "local").values()) == {"local"}
