"""Kubernetes manifests for a multi-worker or parameter-server job (launch v1). Pure:
dicts dumped as YAML.

Multi-worker: an Indexed Job (completionMode Indexed, parallelism = completions =
workers) behind a headless Service; pod i is reachable as JOB-i.SERVICE, and builds its
TF_CONFIG from JOB_COMPLETION_INDEX. A failed pod fails the job
(podFailurePolicy), which restarts as a whole up to backoffLimit times: restart-based
recovery, resumed by BackupAndRestore from the shared checkpoint volume.
Parameter servers: the chief, the workers and the ps tasks as three Jobs, each behind
its own headless Service; the chief's Job completes the training, after which the
worker and ps Jobs (servers that never exit) are deleted with the chief's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import yaml

from rung.launch.emit import Job

PORT = 2222
APP = "rung-train"
# TensorFlow's own images: the CPU one, and for a plan on GPUs its -gpu variant (CUDA and
# cuDNN in it), which a pod needs to see the GPUs it asks for (`nvidia.com/gpu`)
IMAGE = "tensorflow/tensorflow:2.21.0"
GPU_IMAGE = IMAGE + "-gpu"
# The script each pod runs to build its TF_CONFIG: the cluster from the Services' stable
# names, its own task from JOB_COMPLETION_INDEX. Tests run it for every index.
TF_CONFIG_SCRIPT = (
    "import json, os; "
    "cluster = json.loads(os.environ['RUNG_CLUSTER']); "
    "print(json.dumps({'cluster': cluster, 'task': {'type': os.environ['RUNG_TASK_TYPE'], "
    "'index': int(os.environ.get('JOB_COMPLETION_INDEX', '0'))}}))")


def _host(job_name: str, index: int) -> str:
    return f"{job_name}-{index}.{job_name}:{PORT}"


def cluster(job: Job) -> dict[str, list[str]]:
    if job.script_verdict == "multi_worker_mirrored":
        return {"worker": [_host(f"{APP}-worker", i) for i in range(job.workers)]}
    return {"chief": [_host(f"{APP}-chief", 0)],
            "worker": [_host(f"{APP}-worker", i) for i in range(job.workers)],
            "ps": [_host(f"{APP}-ps", i) for i in range(job.ps_tasks)]}


def _service(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "labels": {"app": APP}},
            "spec": {"clusterIP": "None", "selector": {"rung/job": name},
                     "ports": [{"name": "grpc", "port": PORT, "targetPort": PORT}]}}


# The stock TensorFlow image has Keras 3 and no tf-keras, which TF_USE_LEGACY_KERAS=1 needs
# (multi-worker and parameter-server fit are tf-keras runs): a pod without it installs the
# tf-keras of the image's TensorFlow (X.Y.*) before training. An image of the team's own that
# has it (--image) skips this. Tests run it with a stand-in pip.
TF_KERAS_SCRIPT = (
    "python3 -c 'import tf_keras' 2>/dev/null || pip install --no-cache-dir -q \"$(python3 -c "
    "'from importlib.metadata import version; print(\"tf-keras==%s.*\" % version(\"tensorflow\").rsplit(\".\", 1)[0])' "
    "2>/dev/null || echo tf-keras)\"")


def _job(name: str, task_type: str, count: int, job: Job, image: str, train_args: list[str],
         completes: bool) -> dict:
    env = [{"name": "RUNG_CLUSTER", "value": json.dumps(cluster(job))},
           {"name": "RUNG_TASK_TYPE", "value": task_type},
           {"name": "RUNG_WORKLOAD", "value": "/app/workload.py"},
           {"name": "RUNG_CHECKPOINT_DIR", "value": "/checkpoints"}]
    if job.legacy_keras:
        env.append({"name": "TF_USE_LEGACY_KERAS", "value": "1"})
    command = ["/bin/sh", "-c",
               (f"{TF_KERAS_SCRIPT} && " if job.legacy_keras else "")
               + f"export TF_CONFIG=\"$(python3 -c \"{TF_CONFIG_SCRIPT}\")\" && "
               f"exec python3 /app/train.py {' '.join(train_args)}"]
    container = {"name": "train", "image": image, "command": command, "env": env,
                 "ports": [{"containerPort": PORT, "name": "grpc"}],
                 "volumeMounts": [{"name": "code", "mountPath": "/app"},
                                  {"name": "checkpoints", "mountPath": "/checkpoints"}]}
    if task_type == "worker" and job.gpus_per_host:
        # the plan's GPUs a host, each worker's (the NVIDIA device plugin's resource): a pod
        # that asks for none sees none, and trains on its node's CPU. The chief (the
        # coordinator) and the ps tasks run on CPU hosts
        container["resources"] = {"limits": {"nvidia.com/gpu": job.gpus_per_host}}
    spec = {
        "completionMode": "Indexed", "completions": count, "parallelism": count,
        "backoffLimit": 3 if completes else 0,
        "template": {
            "metadata": {"labels": {"app": APP, "rung/job": name}},
            "spec": {
                "subdomain": name,  # pod i answers as NAME-i.NAME (the headless Service)
                "restartPolicy": "Never",
                "containers": [container],
                "volumes": [{"name": "code", "configMap": {"name": f"{APP}-code"}},
                            {"name": "checkpoints", "persistentVolumeClaim": {"claimName": f"{APP}-checkpoints"}}],
            }},
    }
    if completes:
        # a pod that fails fails the job at once: synchronous training restarts as a whole
        spec["podFailurePolicy"] = {"rules": [{"action": "FailJob", "onExitCodes": {
            "containerName": "train", "operator": "NotIn", "values": [0]}}]}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": {"app": APP}},
            "spec": spec}


def _configmap_command(workload, beside: list) -> str:
    """The kubectl line that puts train.py, the workload (as workload.py) and the modules it
    imports from beside it (`beside`) into the ConfigMap mounted at /app, where train.py
    imports the workload with its folder first on sys.path. A ConfigMap's keys are flat: a
    module in a package folder of the team's own cannot go there (said below the line)."""
    import shlex

    files = ["--from-file=train.py", shlex.quote(f"--from-file=workload.py={workload or 'WORKLOAD.py'}")]
    files += [shlex.quote(f"--from-file={Path(m).name}={m}") for m in beside]
    return f"kubectl create configmap {APP}-code " + " ".join(files)


def manifests(job: Job, image: Optional[str], workload=None, modules: Optional[list] = None) -> dict[str, str]:
    """File name -> YAML text (several documents each). `workload` and `modules` (the files
    it imports from its folder, `kerasfit.local_files`) name what goes in the ConfigMap.
    No `image`: TensorFlow's, the -gpu one for a plan on GPUs."""
    image = image or (GPU_IMAGE if job.gpus_per_host else IMAGE)
    root = Path(workload).resolve().parent if workload else None
    modules = list(modules or []) if root is not None else []
    beside = [m for m in modules if Path(m).parent == root]
    nested = [m for m in modules if Path(m).parent != root]
    args = ["--steps", "1000", "--epochs", "10", "--checkpoint-dir", "/checkpoints"]
    dump = lambda docs: yaml.safe_dump_all(docs, sort_keys=False)  # noqa: E731
    files = {}
    if job.script_verdict == "multi_worker_mirrored":
        name = f"{APP}-worker"
        files["job.yaml"] = dump([_service(name), _job(name, "worker", job.workers, job, image,
                                                       args + ["--save-every", "100"], completes=True)])
    else:
        for task_type, count, completes in (("chief", 1, True), ("worker", job.workers, False),
                                            ("ps", job.ps_tasks, False)):
            name = f"{APP}-{task_type}"
            files[f"{task_type}.yaml"] = dump([_service(name), _job(name, task_type, count, job, image, args,
                                                                    completes)])
    files["README.md"] = (
        "# Kubernetes manifests\n\n"
        f"Put train.py and the workload in a ConfigMap, give the job a shared volume, then apply:\n\n"
        "```sh\n"
        f"{_configmap_command(workload, beside)}\n"
        f"# a PersistentVolumeClaim named {APP}-checkpoints (ReadWriteMany) for the backups\n"
        "kubectl apply -f k8s/\n```\n"
        + (f"\nThe workload imports modules in folders of its own ({', '.join(str(m) for m in nested[:3])}), "
           "which a ConfigMap's flat keys cannot hold: build them into the image (--image), or mount the "
           "folder at /app.\n" if nested else "")
        + (f"\nEach worker pod asks for the plan's {job.gpus_per_host} GPU(s) (`nvidia.com/gpu`, the NVIDIA "
           "device plugin's resource)" + (", the chief and the ps tasks for none (they run on CPU hosts)"
                                          if job.script_verdict == "parameter_server" else "")
           + f"; the image ({image}) must have CUDA: TensorFlow's -gpu images do.\n" if job.gpus_per_host else
           "\nNo pod asks for a GPU: the plan was not made for GPUs (`rung init --scenario` of a plan on GPUs, "
           "or `--gpus-per-host N`, adds `nvidia.com/gpu` to the worker pods).\n")
        + "\nEach pod builds its TF_CONFIG from its Service's stable name and JOB_COMPLETION_INDEX; "
        "`rung check-tf-config --set` checks them all (rung's tests do).\n"
        + (f"\ntrain.py runs on tf-keras (TF_USE_LEGACY_KERAS=1), which the stock image ({image}) does not "
           "have: each pod installs the tf-keras of the image's TensorFlow with pip before training (it needs "
           "the network). An image with tf-keras in it (`pip install tf-keras==` the TensorFlow version, "
           "`rung init --image`) skips that.\n" if job.legacy_keras else "")
        + ("\nThe worker and ps Jobs serve until they are deleted: when the chief's Job completes, "
           f"`kubectl delete job {APP}-worker {APP}-ps`.\n" if job.script_verdict == "parameter_server" else ""))
    return files
