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

Writes its table into benchmarks/RESULTS.md (section "Tournament vs single run"; --no-write: print only).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import machine_summary, write_section

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Tournament vs single run"
PUFFERBOX = [sys.executable, "-m", "pufferbox"]
SOLVED = 475.0
DEFAULT_TOURNAMENT_ARGS = "--halving --slice-steps 8192"
# Measured separately (a long run, not repeated by this script): the issue's <10% scheduling-overhead target.
OVERHEAD = (
    "Scheduling overhead (time pods spend not training: actor start, waiting, evaluation, checkpoint copy), "
    "measured with the default schedule and no halving: `pufferbox tournament cartpole --pods 4 --cpus-per-pod 0.5 "
    "--total-steps 8000000 --json` (slices grow from 31k to 500k steps over five generations; 2 CPUs, load "
    "average 3.8 at the end from other jobs): 30 slices, 85.7 s wall, pod time 329.9 s, of which training 300.4 s "
    "and evaluation 12.0 s: overhead **8.9%**, under the 10% target (7.3% before the slice schedule, with fixed "
    "500k-step slices). Short slices cost more: 24.8% with fixed 94k-step slices, and the step-efficient "
    "settings above (8k slices, halving) spend most pod time idle or evaluating by design.")
READING = (
    "What makes the difference (measured while building it, same machine): with the old scheme (fixed slices of "
    "a quarter of a pod's share, every knob perturbed, parents from the top half, four pods at once) the "
    "tournament needed 283k-471k steps. Two pods at a time share the two cores (each trains twice as fast "
    "as four would), but while P branches train in parallel the total grows P times faster than the best "
    "lineage, and a PPO lineage on CartPole needs roughly 50k-150k steps (fewer with shorter rollouts, "
    "which the generator can find: rollout length is one of its knobs). Successive halving (--halving: "
    "generation g runs at most ceil(4/2^g) branches) and short slices (8k steps, so an evaluated score "
    "exists soon after a lineage gets there) are what bring the total down to about one lineage plus "
    "the first rung's search; without --halving, with 16k slices, the same runs needed 138k-271k. The price: "
    "freed slots idle (overhead column: pod time held but not training) and one evaluation per 8k "
    "training steps, so wall time to 475 stays above the single run's, which also pays no Ray start-up. "
    "Results vary a lot between seeds (evaluated scores of 10 episodes are noisy, and CartPole PPO plateaus "
    "around 150-350 before it solves, and pods' timing changes which founder finishes first, so runs of one "
    "seed differ): another run of the same command and code reached 475 at 107,008 / 131,776 / 107,008 steps "
    "(all three under the single run); runs before the last generator change (MAX_CHILDREN) gave 107,008 / "
    "131,776 / 107,072 and once 139,968 / not reached within 500k (best 331; that run was not kept, the "
    "stall mode MAX_CHILDREN targets, re-branching from a lucky agent, is the one seen in others) / 107,008. So: on par with the single run in training steps, ahead on some seeds, a "
    "few percent behind on others; behind once evaluation steps or wall time count.")


def single_run(total_steps: int, seed: int, workdir: Path) -> dict:
    run_dir = workdir / f"single-{seed}"
    start = time.perf_counter()
    subprocess.run([*PUFFERBOX, "train", "cartpole", "--total-steps", str(total_steps), "--seed", str(seed),
                    "--set", "train.stop_on_solve=false", "--run-dir", str(run_dir)],
                   check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    solved = next((r for r in rows if r.get("solved")), None)
    return {"kind": "single", "seed": seed, "wall": wall, "steps": rows[-1]["global_step"],
            "solved_step": solved["global_step"] if solved else None,
            "solved_wall": solved["wall_time"] if solved else None}


def tournament_run(total_steps: int, pods: int, seed: int, workdir: Path, cpus_per_pod: float,
                   extra: list[str]) -> dict:
    from pufferbox.tournament.leaderboard import Leaderboard

    run_dir = workdir / f"tournament-{seed}"
    start = time.perf_counter()
    out = subprocess.run([*PUFFERBOX, "tournament", "cartpole", "--pods", str(pods), "--cpus-per-pod",
                          str(cpus_per_pod), "--total-steps", str(total_steps),
                          "--seed", str(seed), "--run-dir", str(run_dir), "--json", *extra],
                         check=True, capture_output=True, text=True, env={**os.environ, "RAY_ADDRESS": ""})
    wall = time.perf_counter() - start
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    board = Leaderboard(run_dir)
    history = board.history_rows()
    best = [h["best_score"] for h in history]
    # The history's total_steps counts every step trained by then, the slices still in flight included.
    solved = next((h for h in history if h["best_score"] >= SOLVED), None)
    top = board.best()
    board.close()
    return {"kind": "tournament", "seed": seed, "wall": wall, "steps": summary["total_steps"],
            "solved_step": solved["total_steps"] if solved else None,
            "solved_eval_steps": solved["eval_steps"] if solved else None,
            "solved_wall": solved["wall_time"] if solved else None,
            "best": summary["best_score"], "best_monotonic": best == sorted(best),
            "overhead": summary["overhead"], "slices": summary["slices"],
            "truncated": summary.get("truncated_slices"), "lost": summary["lost_slices"],
            "best_hyperparams": top.hyperparams if top else None}


def fmt(value, spec=",") -> str:
    return "-" if value == "" else "not reached" if value is None else format(value, spec)


def verdict(rows: list[dict], seeds: list[int]) -> str:
    """How many seeds the tournament reached 475 no later than the single run, in training steps
    and in training plus evaluation steps (computed, so a re-run rewrites it with its own numbers)."""
    by = {(r["kind"], r["seed"]): r for r in rows}
    pairs = [(by.get(("single", s)), by.get(("tournament", s))) for s in seeds]
    pairs = [(a, b) for a, b in pairs if a and b and a["solved_step"] and b["solved_step"]]
    train = sum(b["solved_step"] <= a["solved_step"] for a, b in pairs)
    both = sum(b["solved_step"] + b["solved_eval_steps"] <= a["solved_step"] for a, b in pairs)
    wall = sum(b["solved_wall"] <= a["solved_wall"] for a, b in pairs)
    monotonic = all(r.get("best_monotonic", True) for r in rows)
    return (f"On {train} of {len(seeds)} seeds the tournament reached 475 in no more training steps than the "
            f"single run; counting its evaluation steps too, on {both} of {len(seeds)}; in wall time, on {wall} of "
            f"{len(seeds)}. The leaderboard's best {'never decreased' if monotonic else 'DECREASED'} in any run.")


def write_results(rows: list[dict], args: argparse.Namespace) -> None:
    targs = f' --tournament-args "{args.tournament_args}"' if args.tournament_args != DEFAULT_TOURNAMENT_ARGS else ""
    lines = [SECTION, "", f"Machine: {machine_summary()} (at the end); load average (1 min) per run in the table.",
             "",
             f"Reproduce: `.venv/bin/python benchmarks/bench_tournament.py --total-steps {args.total_steps} "
             f"--pods {args.pods} --cpus-per-pod {args.cpus_per_pod} --seeds {' '.join(map(str, args.seeds))}"
             f"{targs}`", "",
             f"Both arms get {args.total_steps:,} env steps in total. Single run: `pufferbox train cartpole "
             f"--total-steps {args.total_steps}` (its own settings), steps until the mean of its last 20 training "
             f"episodes reaches 475. Tournament: `pufferbox tournament cartpole --pods {args.pods} --cpus-per-pod "
             f"{args.cpus_per_pod} {args.tournament_args}`; steps = training steps of all pods together (finished, "
             "truncated and still-running slices) when the leaderboard's best evaluated score (10 episodes, mean) "
             "first reaches 475; eval steps = evaluation episodes' steps by then, not included in steps. "
             "Wall s to 475: from the start of training (the single run's trainer; the tournament's driver, so "
             "Ray and pod start-up are included). "
             "Overhead: share of pod time not spent training.", "",
             "| seed | arm | steps to 475 | + eval steps | wall s to 475 | total wall s | best monotonic | "
             "truncated slices | overhead | load |",
             "|---:|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['seed']} | {r['kind']} | {fmt(r['solved_step'])} | {fmt(r.get('solved_eval_steps', ''))} | "
                     f"{fmt(r['solved_wall'], '.1f')} | {r['wall']:.1f} | {r.get('best_monotonic', '')} | "
                     f"{r.get('truncated', '')} | "
                     f"{'' if 'overhead' not in r else format(r['overhead'], '.1%')} | {r['load']:.2f} |")
    lines += ["", "Reading: " + verdict(rows, args.seeds) + " " + READING, "", OVERHEAD]
    write_section(SECTION, "\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--total-steps", type=int, default=500_000)
    parser.add_argument("--pods", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--cpus-per-pod", type=float, default=1.0,
                        help="Ray CPUs per pod: 1 runs two pods at a time on 2 cores, 0.5 all four at once")
    parser.add_argument("--arms", nargs="+", choices=("single", "tournament"), default=["single", "tournament"])
    parser.add_argument("--no-write", action="store_true", help="print the rows, leave RESULTS.md alone")
    parser.add_argument("--tournament-args", default=DEFAULT_TOURNAMENT_ARGS,
                        help="more options for `pufferbox tournament` (default: %(default)s)")
    args = parser.parse_args()
    args.extra = shlex.split(args.tournament_args)
    workdir = Path(tempfile.mkdtemp(prefix="pb-tournament-bench-"))
    rows = []
    try:
        for seed in args.seeds:
            for kind in args.arms:
                arm = (single_run(args.total_steps, seed, workdir) if kind == "single" else
                       tournament_run(args.total_steps, args.pods, seed, workdir, args.cpus_per_pod, args.extra))
                arm["load"] = os.getloadavg()[0]
                print(json.dumps(arm), flush=True)
                rows.append(arm)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if not args.no_write:
        write_results(rows, args)


if __name__ == "__main__":
    main()
