"""Tournament vs a single training run on CartPole, with the same total env steps.

Runs, in one process each, one after the other on this machine:

* a single ``pufferbox train cartpole --total-steps T`` (the command's own settings; T=500k is its
  default budget; no early stop), recording the step at which the mean return of its last 20
  training episodes first reaches 475;
* ``pufferbox tournament cartpole --pods 4 --cpus-per-pod C --total-steps T ARGS`` on a local Ray,
  recording the total training steps of all pods together (finished, truncated and in-flight
  slices) when the leaderboard's best evaluated score first reaches 475, the evaluation steps
  spent by then, whether that best ever decreased, and the share of pod time not spent training.

    .venv/bin/python benchmarks/bench_tournament.py            # T=500k, C=1, ARGS="--halving --slice-steps 8192"
    .venv/bin/python benchmarks/bench_tournament.py --tournament-args "" --cpus-per-pod 0.5   # the defaults

Writes its table to benchmarks/results/tournament.json (the computed verdict as its note) and re-renders it in
RESULTS.md (--no-write: print only).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import load, machine, publish

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = [
    "seed",
    "single: steps to 475",
    "single: wall s to 475",
    "tournament: steps to 475",
    "+ eval steps",
    "wall s to 475",
    "total wall s",
    "truncated slices",
    "overhead",
    "solver's settings",
    "load",
]
ALIGN = "rrrrrrrrrlr"
PUFFERBOX = [sys.executable, "-m", "pufferbox"]
SOLVED = 475.0
DEFAULT_TOURNAMENT_ARGS = "--halving --slice-steps 8192"


def single_run(total_steps: int, seed: int, workdir: Path) -> dict:
    run_dir = workdir / f"single-{seed}"
    start = time.perf_counter()
    subprocess.run(
        [
            *PUFFERBOX,
            "train",
            "cartpole",
            "--total-steps",
            str(total_steps),
            "--seed",
            str(seed),
            "--set",
            "train.stop_on_solve=false",
            "--run-dir",
            str(run_dir),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    solved = next((r for r in rows if r.get("solved")), None)
    return {
        "kind": "single",
        "seed": seed,
        "wall": wall,
        "steps": rows[-1]["global_step"],
        "solved_step": solved["global_step"] if solved else None,
        "solved_wall": solved["wall_time"] if solved else None,
    }


def tournament_run(total_steps: int, pods: int, seed: int, workdir: Path, cpus_per_pod: float, extra: list[str]) -> dict:
    from pufferbox.tournament.leaderboard import Leaderboard

    run_dir = workdir / f"tournament-{seed}"
    start = time.perf_counter()
    out = subprocess.run(
        [
            *PUFFERBOX,
            "tournament",
            "cartpole",
            "--pods",
            str(pods),
            "--cpus-per-pod",
            str(cpus_per_pod),
            "--total-steps",
            str(total_steps),
            "--seed",
            str(seed),
            "--run-dir",
            str(run_dir),
            "--json",
            *extra,
        ],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "RAY_ADDRESS": ""},
    )
    wall = time.perf_counter() - start
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    board = Leaderboard(run_dir)
    history = board.history_rows()
    best = [h["best_score"] for h in history]
    # The history's total_steps counts every step trained by then, the slices still in flight included.
    solved = next((h for h in history if h["best_score"] >= SOLVED), None)
    # The settings of the first agent that reached 475: what the search had found by then.
    first = min((e for e in board.entries(on_board_only=False) if e.score >= SOLVED), key=lambda e: e.id, default=None)
    board.close()
    return {
        "kind": "tournament",
        "seed": seed,
        "wall": wall,
        "steps": summary["total_steps"],
        "solved_step": solved["total_steps"] if solved else None,
        "solved_eval_steps": solved["eval_steps"] if solved else None,
        "solved_wall": solved["wall_time"] if solved else None,
        "best": summary["best_score"],
        "best_monotonic": best == sorted(best),
        "overhead": summary["overhead"],
        "slices": summary["slices"],
        "truncated": summary.get("truncated_slices"),
        "lost": summary["lost_slices"],
        "solver_hyperparams": first.hyperparams if first else None,
    }


def fmt(value, spec=",") -> str:
    return "-" if value == "" else "not reached" if value is None else format(value, spec)


def verdict(rows: list[dict], seeds: list[int]) -> str:
    """How many seeds the tournament reached 475 no later than the single run, in training steps
    and in training plus evaluation steps (computed, so a re-run rewrites it with its own numbers)."""
    by = {(r["kind"], r["seed"]): r for r in rows}
    inf = float("inf")

    def cost(row: dict | None, key: str = "solved_step", plus_eval: bool = False) -> float:
        if row is None or row[key] is None:
            return inf  # not reached within the budget: later than any run that did
        return row[key] + (row["solved_eval_steps"] if plus_eval else 0)

    pairs = [(by.get(("single", s)), by.get(("tournament", s))) for s in seeds]
    train = sum(cost(b) <= cost(a) for a, b in pairs)
    both = sum(cost(b, plus_eval=True) <= cost(a) for a, b in pairs)
    wall = sum(cost(b, "solved_wall") <= cost(a, "solved_wall") for a, b in pairs)
    monotonic = all(r.get("best_monotonic", True) for r in rows)
    single = statistics.median(cost(a) for a, _ in pairs)
    tour = statistics.median(cost(b) for _, b in pairs)
    tour_eval = statistics.median(cost(b, plus_eval=True) for _, b in pairs)
    missed = sum(cost(b) == inf for _, b in pairs)

    def k(x: float) -> str:
        return "not reached" if x == inf else f"{x / 1000:,.0f}k"

    return (
        f"Median steps to 475 over {len(seeds)} seeds: single run {k(single)}, tournament {k(tour)} "
        f"({tour / single:.2f}x; {k(tour_eval)} = {tour_eval / single:.2f}x counting its evaluation steps); "
        f"the tournament missed 475 within the budget on {missed} seeds. Seed by seed, the tournament was "
        f"no later in training steps on {train} of {len(seeds)}, counting evaluation steps on {both}, in wall "
        f"time on {wall}. The leaderboard's best {'never decreased' if monotonic else 'DECREASED'} in any run."
    )


def settings(row: dict) -> str:
    if row["kind"] == "single":
        from pufferbox.registry import get_registry

        h = {f"train.{k}": v for k, v in get_registry().get("cartpole").training.config["train"].items()}
    else:
        h = row.get("solver_hyperparams")
    if not h:
        return "-"
    return (
        f"{h['train.num_steps']} / {h['train.update_epochs']} / {h['train.num_minibatches']} / "
        f"{h['train.learning_rate']:.2g}"
    )


def paired_row(seed: int, rows: list[dict]) -> list:
    """One seed's single run and tournament side by side (``-`` where an arm did not run)."""
    single = next((r for r in rows if r["seed"] == seed and r["kind"] == "single"), None)
    tour = next((r for r in rows if r["seed"] == seed and r["kind"] == "tournament"), None)
    cells: list = [seed]
    cells += [fmt(single["solved_step"]), fmt(single["solved_wall"], ".1f")] if single else ["-", "-"]
    if tour is None:
        return cells + ["-"] * 7
    overhead = format(tour["overhead"], ".1%") if tour.get("overhead") is not None else "-"
    return cells + [
        fmt(tour["solved_step"]),
        fmt(tour.get("solved_eval_steps", "")),
        fmt(tour["solved_wall"], ".1f"),
        f"{tour['wall']:.1f}",
        tour.get("truncated", ""),
        overhead,
        settings(tour),
        f"{tour['load']:.2f}",
    ]


def write_results(rows: list[dict], args: argparse.Namespace, write: bool) -> None:
    targs = f' --tournament-args "{args.tournament_args}"' if args.tournament_args != DEFAULT_TOURNAMENT_ARGS else ""
    command = (
        f".venv/bin/python benchmarks/bench_tournament.py --total-steps {args.total_steps} --pods {args.pods} "
        f"--cpus-per-pod {args.cpus_per_pod} --seeds {' '.join(map(str, args.seeds))}{targs}"
    )
    meta = {
        "command": command,
        "machine": machine(),
        "load": f"{load()} (at the end); the tournament's 1-minute load in the table",
        "peer": "a single run with the env's defaults",
    }
    table = [paired_row(seed, rows) for seed in dict.fromkeys(r["seed"] for r in rows)]
    publish("tournament", COLUMNS, table, meta, write, align=ALIGN, notes=[verdict(rows, args.seeds)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--total-steps", type=int, default=500_000)
    parser.add_argument("--pods", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument(
        "--cpus-per-pod",
        type=float,
        default=1.0,
        help="Ray CPUs per pod: 1 runs two pods at a time on 2 cores, 0.5 all four at once",
    )
    parser.add_argument("--arms", nargs="+", choices=("single", "tournament"), default=["single", "tournament"])
    parser.add_argument("--no-write", action="store_true", help="print only: write no JSON, leave RESULTS.md alone")
    parser.add_argument(
        "--tournament-args",
        default=DEFAULT_TOURNAMENT_ARGS,
        help="more options for `pufferbox tournament` (default: %(default)s)",
    )
    args = parser.parse_args()
    args.extra = shlex.split(args.tournament_args)
    workdir = Path(tempfile.mkdtemp(prefix="pb-tournament-bench-"))
    rows = []
    try:
        for seed in args.seeds:
            for kind in args.arms:
                arm = (
                    single_run(args.total_steps, seed, workdir)
                    if kind == "single"
                    else tournament_run(args.total_steps, args.pods, seed, workdir, args.cpus_per_pod, args.extra)
                )
                arm["load"] = os.getloadavg()[0]
                print(json.dumps(arm), flush=True)
                rows.append(arm)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    write_results(rows, args, not args.no_write)


if __name__ == "__main__":
    main()
