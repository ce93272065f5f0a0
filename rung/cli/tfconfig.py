"""`rung tf-config` and `rung check-tf-config`: TF_CONFIG built and checked as data.
Pure: neither command imports TensorFlow or Ray."""

from __future__ import annotations

import json
import os
import sys

from rung.errors import InputError

STRATEGIES = ("multi_worker_mirrored", "parameter_server")


def register(sub) -> None:
    p = sub.add_parser("tf-config", help="build the TF_CONFIG of every task of a job",
                       description="Print the TF_CONFIG (JSON) of one task, or with --all one line per task.")
    p.add_argument("--strategy", required=True, choices=STRATEGIES, help="the job's strategy")
    p.add_argument("--workers", required=True, metavar="HOST:PORT[,...]", help="the worker tasks, in index order")
    p.add_argument("--chief", metavar="HOST:PORT", help="the chief (the coordinator, for parameter_server)")
    p.add_argument("--ps", metavar="HOST:PORT[,...]", help="parameter-server tasks")
    p.add_argument("--evaluator", metavar="HOST:PORT", help="the evaluator task, which reads the checkpoints apart from training")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--task", metavar="TYPE:INDEX", help="the task to print (default: the first)")
    which.add_argument("--all", action="store_true", help="one line per task: {\"task\": ..., \"TF_CONFIG\": ...}")
    p.set_defaults(run=run_build)

    c = sub.add_parser("check-tf-config", help="check a TF_CONFIG (or a whole job's) before TensorFlow hangs on it",
                       description="Read a TF_CONFIG from FILE, standard input (-) or $TF_CONFIG and check it "
                                   "with TensorFlow's rules and the run-time ones. Exit 0 valid, 2 not.")
    c.add_argument("file", nargs="?", metavar="FILE|-")
    c.add_argument("--strategy", choices=("single_device", "mirrored", *STRATEGIES, "tpu"),
                   help="also check what this strategy needs")
    c.add_argument("--set", action="store_true", help="the input is a whole job's TF_CONFIGs, one per line")
    c.set_defaults(run=run_check)


def _split(text):
    return [a.strip() for a in text.split(",") if a.strip()] if text else []


def _flag(field: str) -> str:
    """A cluster field as the flag that gave it: cluster.worker[1] -> --workers [1]."""
    if not field.startswith("cluster."):
        return field
    job, _, index = field[len("cluster."):].partition("[")
    return f"--{'workers' if job == 'worker' else job}" + (f" [{index}" if index else "")


def run_build(args) -> int:
    from rung.launch import tfconfig as T

    try:
        cluster = T.cluster_for(args.strategy, _split(args.workers), args.chief, _split(args.ps), args.evaluator)
        if args.all:
            for line in T.all_tf_configs(cluster):
                print(json.dumps(line))
            return 0
        task = T.parse_task(args.task, cluster) if args.task else T.tasks_of(cluster)[0]
    except T.TFConfigError as e:
        raise InputError("tf-config", _flag(e.field), e.message) from None
    print(json.dumps(T.tf_config(cluster, task)))
    return 0


def _read(args) -> tuple[str, str]:
    if args.file and args.file != "-":
        try:
            with open(args.file, encoding="utf-8") as f:
                return f.read(), args.file
        except OSError as e:
            if args.file.lstrip().startswith("{"):  # the TF_CONFIG itself, where a file was expected
                raise InputError("check-tf-config", None, "received a TF_CONFIG as an argument where a file name "
                                 "was expected: give it on standard input (echo '{...}' | rung check-tf-config -) "
                                 "or in $TF_CONFIG") from None
            raise InputError(args.file, None, f"cannot be read: {e.strerror}") from None
    if args.file == "-" or "TF_CONFIG" not in os.environ:
        if sys.stdin is None or (args.file is None and sys.stdin.isatty()):
            raise InputError("TF_CONFIG", None, "nothing to check: give FILE, - for standard input, or set $TF_CONFIG")
        return sys.stdin.read(), "<stdin>"
    return os.environ["TF_CONFIG"], "$TF_CONFIG"


def run_check(args) -> int:
    from rung.launch import tfconfig as T

    text, where = _read(args)
    try:
        if args.set:
            print(T.check_set(T.parse_set_lines(text.splitlines()), args.strategy))
            return 0
        try:
            config = json.loads(text) if text.strip() else None
        except json.JSONDecodeError as e:
            raise T.TFConfigError("(top level)", f"not JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
        if config is None:
            raise T.TFConfigError("(top level)", "empty; expected a JSON object ({} for local training)")
        task = T.check(config, args.strategy)
    except T.TFConfigError as e:
        raise InputError(where, e.field, e.message) from None
    print(T.summary(config, task))
    return 0
