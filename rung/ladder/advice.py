"""What a verdict hands the team: the lines that create the strategy, and what they
take on with it. Data, printed by the report."""

from __future__ import annotations

from rung.ladder.decision import Decision

_CODE = {
    "fix_input_pipeline": (
        "dataset = (tf.data.Dataset.from_tensor_slices(files)\n"
        "           .interleave(read, num_parallel_calls=tf.data.AUTOTUNE)\n"
        "           .map(parse, num_parallel_calls=tf.data.AUTOTUNE)\n"
        "           .cache()  # if it fits in memory; random augmentation only after it\n"
        "           .map(augment, num_parallel_calls=tf.data.AUTOTUNE)\n"
        "           .batch(batch_size, drop_remainder=True)\n"
        "           .prefetch(tf.data.AUTOTUNE))"),
    "single_device": 'strategy = tf.distribute.OneDeviceStrategy("/gpu:0")',
    "mirrored": "strategy = tf.distribute.MirroredStrategy()  # all GPUs of this host, NCCL all-reduce",
    "multi_worker_mirrored": (
        "# TF_CONFIG (set before TensorFlow starts) names every worker and this one's index\n"
        "options = tf.distribute.experimental.CommunicationOptions(\n"
        "    implementation=tf.distribute.experimental.CommunicationImplementation.NCCL,\n"
        "    timeout_seconds=600)  # a dead peer fails the step instead of hanging it\n"
        "strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)"),
    "parameter_server": (
        "resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()\n"
        "strategy = tf.distribute.experimental.ParameterServerStrategy(\n"
        "    resolver,\n"
        "    variable_partitioner=tf.distribute.experimental.partitioners.MinSizePartitioner(\n"
        "        min_shard_bytes=256 << 10, max_shards={ps_tasks}))\n"
        "coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)"),
    "tpu": (
        'resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")\n'
        "tf.config.experimental_connect_to_cluster(resolver)\n"
        "tf.tpu.experimental.initialize_tpu_system(resolver)\n"
        "strategy = tf.distribute.TPUStrategy(resolver)"),
    "needs_sharding": (
        "# No tf.distribute strategy: each replicates the whole model. Shard parameters and\n"
        "# optimizer state across devices (e.g. tf.experimental.dtensor layouts), or shrink the\n"
        "# state first (mixed precision, an optimizer with fewer slots)."),
}


def code_for(d: Decision, ctx) -> str:
    """The lines that create the strategy, with the decision's strategy_options."""
    o = d.strategy_options
    if d.verdict == "mirrored" and o.get("cross_device_ops"):
        return (f"strategy = tf.distribute.MirroredStrategy(  # all devices of this host\n"
                f"    cross_device_ops=tf.distribute.{o['cross_device_ops']}())")
    if d.verdict == "multi_worker_mirrored" and o.get("communication"):
        return _CODE[d.verdict].replace("CommunicationImplementation.NCCL",
                                        f"CommunicationImplementation.{o['communication']}").replace(
            "timeout_seconds=600", f"timeout_seconds={o['timeout_seconds']}")
    if d.verdict == "parameter_server" and not o.get("variable_partitioner"):
        return ("resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()\n"
                "strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)\n"
                "coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)")
    return _CODE[d.verdict].format(ps_tasks=max(1, d.ps_tasks))


def takes_on(d: Decision, ctx) -> list[str]:
    p = d.prediction
    v = d.verdict
    if v == "fix_input_pipeline":
        return ["profile the pipeline (rung profile, or the TensorFlow Profiler's input-pipeline page)",
                "parallel map and interleave, prefetch, cache small data, no Python functions in map",
                "then ask again: scaling decisions made on an input-bound job are wrong"]
    if v == "single_device":
        return ["nothing new: one process, one device, one debugger"]
    if v == "mirrored":
        return ["one process drives all devices of the host: no TF_CONFIG, no network",
                f"global batch = {p.devices} x per-device batch: scale the learning rate (and warm it up)",
                "shard or repeat the dataset so every replica gets distinct examples"]
    if v == "multi_worker_mirrored":
        return ["TF_CONFIG on every worker, the same cluster list, its own task index",
                f"gang scheduling: all {p.hosts} workers up at once, or none trains",
                "the slowest worker sets every step's pace; keep hosts identical",
                "restart-based recovery: tf.keras.callbacks.BackupAndRestore (tf-keras; Keras 3's "
                "model.fit fails under multi-worker, so set TF_USE_LEGACY_KERAS=1)",
                "a collective timeout so a dead peer fails fast instead of hanging"]
    if v == "parameter_server":
        return [f"stale gradients: updates about {p.staleness_steps} steps old; retune the learning rate",
                f"{d.ps_tasks} parameter-server task(s) and a coordinator on CPU hosts, beside "
                f"{p.hosts} workers",
                "tf.distribute.experimental: an experimental API; tf-keras model.fit "
                "(TF_USE_LEGACY_KERAS=1) or a custom loop with ClusterCoordinator.schedule",
                "no global step boundary to debug from; runs are not reproducible step for step",
                "the dataset is created per worker (DatasetCreator or coordinator.create_per_worker_dataset)"]
    if v == "tpu":
        return ["static shapes: pad or bucket variable-length inputs, drop_remainder=True",
                "XLA compilation of the whole step: data-dependent control flow needs rework",
                "connect to the TPU cluster before building the model; budget porting time"]
    return ["a sharded (model-parallel) set-up instead of data parallelism",
            "or a smaller state: mixed precision, SGD/Adafactor instead of Adam"]
