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
import statistics
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
    "settings above (8k slices, halving) spend most pod time idle or evaluating by design."
)
READING = (
    "Where the tournament's steps go: the first generation trains four founders (the base settings and three "
    "perturbed ones, 8k steps each), the second two branches; from then on successive halving leaves one "
    "branch, so its total is about one lineage plus ~32k steps of search, plus whatever a lineage loses when "
    "the next slice restarts from an older agent. A single lineage continued slice by slice with the base "
    "settings (one pod, no exploration; an exploratory run with a throwaway driver, 6 seeds) reached an "
    "evaluated 475 at a median of ~124k steps (107k-149k): earlier than the single run's own criterion, "
    "because an evaluation of the current weights does not lag the way a mean of the last 20 training "
    "episodes does (on 64 envs a 500-step episode spans ~16 updates), and the board's best is the maximum of "
    "many noisy evaluations. So the tournament beats the single run in steps only when its search finds "
    "settings that learn faster per step than the defaults, which are tuned for wall time, and wastes little "
    "on the way. Such settings exist (single runs, 4 seeds: `--set train.num_steps=16 --set "
    "train.update_epochs=10` solved at 75k-101k, `train.update_epochs=10` at 102k-112k, the defaults at "
    "121k-145k); three perturbed founders and one-knob children find some of them (the table's last column: "
    "what the solving agent ran with). What changed this round, each measured with this script: (1) lineage "
    "tips are kept: a continued agent whose 10-episode evaluation was unlucky used to fall off the 8-entry "
    "board with its checkpoint; (2) a parent's maturity is its generation (a founder whose long rollouts "
    "overshot the 8k slice by 64 steps used to win the first exploit over better-scoring founders); with "
    "both, 20 seeds gave a median of 152k steps (1.03x the single run, worst 297k); (3) a lineage is now "
    "continued unless it collapsed (score below a quarter of the best) instead of unless it fell two standard "
    "errors behind: a PPO agent's evaluated score swings between slices (415, 184, 264 within 16k steps of "
    "one lineage) by more than its episodes' spread says, and going back to a better-scoring older agent threw "
    "the lineage's steps away; that is the table above. Tried and dropped on 10-20 seeds each: perturbations "
    "that always move the knob (median above 200k, 3 of 10 not reached), founders perturbed once instead of "
    "twice, first slices of 4k, annealing each slice's learning rate by its lineage's steps (median 152k on 10 "
    "seeds). Runs of one seed differ (pods' timing decides which founder finishes first), so read the "
    "medians, not single rows."
)


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
        f"the tournament did not reach 475 within the budget on {missed}. Seed by seed, the tournament was "
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


def write_results(rows: list[dict], args: argparse.Namespace) -> None:
    targs = f' --tournament-args "{args.tournament_args}"' if args.tournament_args != DEFAULT_TOURNAMENT_ARGS else ""
    lines = [
        SECTION,
        "",
        f"Machine: {machine_summary()} (at the end); load average (1 min) per run in the table.",
        "",
        f"Reproduce: `.venv/bin/python benchmarks/bench_tournament.py --total-steps {args.total_steps} "
        f"--pods {args.pods} --cpus-per-pod {args.cpus_per_pod} --seeds {' '.join(map(str, args.seeds))}"
        f"{targs}`",
        "",
        f"Both arms get {args.total_steps:,} env steps in total. Single run: `pufferbox train cartpole "
        f"--total-steps {args.total_steps}` (its own settings), steps until the mean of its last 20 training "
        f"episodes reaches 475. Tournament: `pufferbox tournament cartpole --pods {args.pods} --cpus-per-pod "
        f"{args.cpus_per_pod} {args.tournament_args}`; steps = training steps of all pods together (finished, "
        "truncated and still-running slices) when the leaderboard's best evaluated score (10 episodes, mean) "
        "first reaches 475; eval steps = evaluation episodes' steps by then, not included in steps. "
        "Wall s to 475: from the start of training (the single run's trainer; the tournament's driver, so "
        "Ray and pod start-up are included). "
        "Overhead: share of pod time not spent training.",
        "",
        "Solver's settings: rollout length / PPO epochs / minibatches / learning rate of the first agent that "
        "reached 475 (the single run: the env's defaults).",
        "",
        "| seed | arm | steps to 475 | + eval steps | wall s to 475 | total wall s | best monotonic | "
        "truncated slices | overhead | solver's settings | load |",
        "|---:|---|---:|---:|---:|---:|---|---:|---:|---|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['seed']} | {r['kind']} | {fmt(r['solved_step'])} | {fmt(r.get('solved_eval_steps', ''))} | "
            f"{fmt(r['solved_wall'], '.1f')} | {r['wall']:.1f} | {r.get('best_monotonic', '')} | "
            f"{r.get('truncated', '')} | "
            f"{'' if 'overhead' not in r else format(r['overhead'], '.1%')} | {settings(r)} | "
            f"{r['load']:.2f} |"
        )
    lines += ["", "Reading: " + verdict(rows, args.seeds) + " " + READING, "", OVERHEAD]
    write_section(SECTION, "\n".join(lines))


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
    parser.add_argument("--no-write", action="store_true", help="print the rows, leave RESULTS.md alone")
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
    if not args.no_write:
        write_results(rows, args)


if __name__ == "__main__":
    main()
