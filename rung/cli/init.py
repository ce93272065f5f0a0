"""`rung init`: write a runnable training entry point for a decision (launch v1)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from rung.cli import _job
from rung.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("init", help="write train.py (and a Ray launcher, k8s manifests) for a decision",
                       description="Write DIR/train.py for the verdict, wired to the unchanged workload file, "
                                   "plus launch_ray.py (multi-worker, parameter servers), k8s/ (--k8s) and a "
                                   "README. Imports neither TensorFlow nor Ray.")
    _job.add_arguments(p)
    o = p.add_argument_group("output")
    o.add_argument("--out", metavar="DIR", help="where to write (default ./rung-<verdict>/)")
    o.add_argument("--force", action="store_true", help="write into a non-empty DIR")
    o.add_argument("--k8s", action="store_true", help="also write Kubernetes manifests")
    o.add_argument("--image", help="container image for --k8s (default: tensorflow/tensorflow:2.21.0, its -gpu "
                                   "variant for a plan on GPUs)")
    p.set_defaults(run=run)


def write_files(job, workload: Path, out: Path, k8s: bool = False, image: str = "") -> list[str]:
    """Write every file into a temporary folder beside `out`, then move them in: all or nothing."""
    from rung.launch import emit

    files = {"train.py": emit.train_py(job, workload)}
    if job.script_verdict in ("multi_worker_mirrored", "parameter_server"):
        files["launch_ray.py"] = emit.launch_ray_py(job)
    if k8s:
        from rung.kerasfit import local_files
        from rung.launch import k8s as manifests

        files.update({f"k8s/{name}": text for name, text in
                      manifests.manifests(job, image, workload, local_files(workload)).items()})
    files["README.md"] = emit.readme(job, workload, sorted(files) + ["README.md"])
    team = team_code(workload)
    for name in files:
        if (out / name).resolve() in team:
            raise InputError(str(out / name), None, "is the workload or a module it imports, and rung would write "
                                                    f"its own {name} over it; choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".rung-init-", dir=out))
    try:
        for name, text in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_text(text, encoding="utf-8")
        for name in files:
            dest = out / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).replace(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return sorted(files)


def team_code(workload: Path) -> set:
    """The workload file and the modules it imports from its folder, resolved: what no file
    rung writes may replace (`--out` the workload's own folder with --force wrote train.py
    over a team's train.py, which the workload imported)."""
    from rung.kerasfit import local_files

    return {workload.resolve(), *local_files(workload)}


def run(args) -> int:
    workload = _job.workload_path(args.workload)
    job = _job.job_from(args)
    out = Path(args.out or f"rung-{job.verdict}")
    if out.exists() and not out.is_dir():
        raise InputError(str(out), None, "is a file; expected a folder for --out")
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise InputError(str(out), None, "is not empty; choose another --out or pass --force")
    written = write_files(job, workload, out, args.k8s, args.image)
    from rung.launch.emit import notes

    for note in notes(job):
        print(f"rung init: warning: {note}", file=sys.stderr)
    from rung.kerasfit import default_batch_note, file_kept_batch

    kept = None if args.batch or args.scenario else file_kept_batch(workload, job.batch)
    if kept:  # keras.io's `batch_size = 128`: train.py's default is rung's 32 (its --batch takes another)
        print("rung init: warning: " + default_batch_note(kept, job.batch, "train.py trains", "or train.py --batch "
                                                          f"{kept}: the examples a step and its memory follow the "
                                                          "batch"), file=sys.stderr)
    print(f"wrote {out}/: {', '.join(written)}  ({job.verdict}"
          + (f", {job.workers} workers" if job.script_verdict in ("multi_worker_mirrored", "parameter_server") else "")
          + (f", {job.ps_tasks} ps" if job.script_verdict == "parameter_server" else "") + ")", file=sys.stdout)
    print(f"next: see {out}/README.md", file=sys.stdout)
    return 0
