"""The main job at two git revisions, side by side in one run: `pufferbox train` steps/s, as a ratio.

Each revision runs from its own `git worktree` (its core and its plugins first on PYTHONPATH, the C
extensions of its plugins built in place) with this venv's dependencies; runs are interleaved
(base, head, base, head, ...) so load changes hit both. Each run is a fresh process, and its
steps/s is the one `pufferbox train` prints in its ``done:`` line (training steps over training
time). The default base is the commit before agent groups (issue 16), so the ratio answers "did
single-group training slow down?". The ``cartpole-solve`` job is issue 13's no-regression check instead:
`pufferbox train cartpole` with its defaults (it stops when solved), seed = repeat + 1, timed from
launch to exit, imports included, as ``bench_train_cartpole.py`` times it.

    .venv/bin/python benchmarks/bench_revisions.py [--base REV] [--head REV|worktree] [--repeats 3]

Prints one JSON line per run, then per job the median steps/s of each revision and head/base.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE_GROUPS = "88f873c^"  # the commit before agent groups were introduced
JOBS = {
    "cartpole": ["train", "cartpole", "--total-steps", "300000", "--set", "train.stop_on_solve=false"],
    "nethack": ["train", "nethack", "--total-steps", "16384"],
    # data-parallel learners (issue 41): 2 learners of 8 envs each, one torch thread each
    "nethack-learners2": ["train", "nethack", "--total-steps", "16384", "--learners", "2", "--set", "train.torch_threads=1"],
    "cartpole-solve": ["train", "cartpole"],
    # Ocean Pong with its 2-core defaults (stops when solved): launch to solved, and the steps it took
    "pong-solve": ["train", "ocean/pong"],
}
SEEDED = {"cartpole-solve", "pong-solve"}  # jobs that run seed repeat + 1; the others keep their default seed
DONE = re.compile(r"done: \S+ ([\d,]+) steps in [\d.]+ s \(([\d,]+) steps/s\)")


def checkout(rev: str, into: Path) -> Path:
    """A worktree of ``rev`` under ``into`` with its plugins' C extensions built in place."""
    sha = subprocess.run(["git", "rev-parse", rev], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    tree = into / sha[:12]
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), sha], cwd=ROOT, check=True, capture_output=True)
    for setup in sorted(tree.glob("plugins/*/setup.py")):
        subprocess.run(
            [sys.executable, "setup.py", "build_ext", "--inplace"], cwd=setup.parent, check=True, capture_output=True
        )
    return tree


def pythonpath(tree: Path) -> str:
    return os.pathsep.join([str(tree), *sorted(str(p) for p in tree.glob("plugins/*") if p.is_dir())])


def run(tree: Path, job: list[str], workdir: Path) -> tuple[float, float, int]:
    """(training steps/s from the ``done:`` line, wall seconds from launch to exit, steps trained)."""
    env = {**os.environ, "PYTHONPATH": pythonpath(tree)}
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "pufferbox", *job, "--run-dir", str(workdir / "run")],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    match = DONE.search(out.stdout)
    if out.returncode != 0 or match is None:
        raise SystemExit(f"{tree.name}: {' '.join(job)} failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    return float(match.group(2).replace(",", "")), wall, int(match.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=BEFORE_GROUPS)
    parser.add_argument("--head", default="worktree", help="a revision, or 'worktree' (this checkout as it is)")
    parser.add_argument("--jobs", nargs="+", default=["cartpole", "nethack"], choices=list(JOBS))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pufferbox-revs-") as tmp:
        trees = {"base": checkout(args.base, Path(tmp))}
        trees["head"] = ROOT if args.head == "worktree" else checkout(args.head, Path(tmp))
        try:
            sps: dict[tuple[str, str], list[float]] = {}
            walls: dict[tuple[str, str], list[float]] = {}
            for job in args.jobs:
                for repeat in range(args.repeats):
                    seed = ["--seed", str(repeat + 1)] if job in SEEDED else []
                    for side, tree in trees.items():
                        work = Path(tempfile.mkdtemp(dir=tmp))
                        value, wall, steps = run(tree, [*JOBS[job], *seed], work)
                        sps.setdefault((job, side), []).append(value)
                        walls.setdefault((job, side), []).append(round(wall, 2))
                        row = {"job": job, "side": side, "repeat": repeat, "sps": value, "wall_s": round(wall, 2)}
                        row["steps"] = steps
                        print(json.dumps({**row, "load1": os.getloadavg()[0]}))
            for job in args.jobs:
                base, head = statistics.median(sps[(job, "base")]), statistics.median(sps[(job, "head")])
                print(
                    f"{job}: base {args.base} {base:,.0f} steps/s, head {args.head} {head:,.0f} steps/s, "
                    f"head/base {head / base:.2f}x (medians of {args.repeats}; runs: "
                    f"base {sps[(job, 'base')]}, head {sps[(job, 'head')]})"
                )
                if job in SEEDED:
                    base_wall, head_wall = statistics.median(walls[(job, "base")]), statistics.median(walls[(job, "head")])
                    print(
                        f"{job}: launch to exit, median base {base_wall:.2f} s, head {head_wall:.2f} s "
                        f"(runs: base {walls[(job, 'base')]}, head {walls[(job, 'head')]})"
                    )
        finally:
            for tree in trees.values():
                if tree != ROOT:
                    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)


if __name__ == "__main__":
    main()
