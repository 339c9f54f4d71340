"""Learning per step with 1 vs N data-parallel learners ("learning per step unchanged").

Runs ``pufferbox train ENV --seed S --learners N`` for every seed and learner count at one fixed budget
(``train.stop_on_solve=false``, so every run has the same number of steps), one run at a time, and
reports per run the first step whose recent mean return reaches the env's solved return, the final
recent return and steps/s; then per learner count the mean over seeds of the recent return at each
quarter of the budget, and one PNG of each learner count's mean curve with the seeds' range shaded.

N learners step ``num_envs / N`` envs each, seeded as those envs of one run with all of them, and take
the PPO steps one learner would take on the whole batch: the runs differ only in the actions sampled
(each learner samples from its own torch generator), so the same seed gives different but equally
likely trajectories.

    python benchmarks/learners_curves.py ocean/pong --learners 1 2 --seeds 1 2 3 4 5 --total-steps 2500000
    python benchmarks/learners_curves.py cartpole --total-steps 200000 --plot cartpole-learners.png

``--write NAME`` also writes the per-quarter table as benchmarks/results/NAME.json (RESULTS.md shows
``learners_curves_cartpole`` and ``learners_curves_pong``) and re-renders it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pufferbox.registry import get_registry
from pufferbox.train.plot import read_metrics


def train(env: str, seed: int, learners: int, steps: int, run_dir: Path, extra: list[str]) -> list[dict]:
    cmd = [sys.executable, "-m", "pufferbox", "train", env, "--seed", str(seed), "--learners", str(learners)]
    cmd += ["--total-steps", str(steps), "--run-dir", str(run_dir), "--no-tensorboard"]
    cmd += ["--set", "train.stop_on_solve=false", *extra]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return read_metrics(run_dir)


def solved_step(rows: list[dict], target: float | None) -> int | None:
    if target is None:
        return None
    return next((r["global_step"] for r in rows if (r.get("return_recent") or float("-inf")) >= target), None)


def at_quarters(rows: list[dict], steps: int) -> list[float]:
    """The recent mean return at the first update past each quarter of the budget."""
    out = []
    for quarter in (0.25, 0.5, 0.75, 1.0):
        row = next((r for r in rows if r["global_step"] >= quarter * steps - 1), rows[-1])
        out.append(row["return_recent"])
    return out


def plot_means(runs: dict[int, list[list[dict]]], output: str) -> str:
    """Per learner count, the mean recent return over seeds against steps, with the seeds' range shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for n, seeds in runs.items():
        length = min(len(rows) for rows in seeds)  # every run logs at the same steps (same batch per update)
        steps = [r["global_step"] for r in seeds[0][:length]]
        values = np.array([[r["return_recent"] for r in rows[:length]] for rows in seeds], dtype=float)
        label = f"{n} learner{'s' * (n > 1)} (mean of {len(seeds)} seeds, range shaded)"
        ax.plot(steps, values.mean(axis=0), label=label)
        ax.fill_between(steps, values.min(axis=0), values.max(axis=0), alpha=0.2)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return (recent mean)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(output, dpi=90)
    return output


def short(steps: float) -> str:
    """147k, 2.39M: a step count as the table shows it."""
    return f"{steps / 1e6:.2f}M" if steps >= 1e6 else f"{steps / 1e3:.0f}k"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("env")
    parser.add_argument("--learners", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--total-steps", type=int, required=True)
    parser.add_argument("--plot", default=None, help="PNG of every run's curve (default: ENV-learners.png here)")
    parser.add_argument("--set", dest="extra", action="append", default=[], help="more trainer settings")
    parser.add_argument("--keep", default=None, help="keep the run directories here (default: a temporary one)")
    parser.add_argument("--write", metavar="NAME", help="write the table as benchmarks/results/NAME.json")
    args = parser.parse_args()
    target = get_registry().get(args.env).training.solved_return
    extra = [item for setting in args.extra for item in ("--set", setting)]
    print(f"uptime before: {os.getloadavg()}; solved return {target}", flush=True)
    runs, table = {n: [] for n in args.learners}, {n: [] for n in args.learners}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            for n in args.learners:
                rows = train(args.env, seed, n, args.total_steps, Path(args.keep or tmp) / f"s{seed}-n{n}", extra)
                runs[n].append(rows)
                solved, last = solved_step(rows, target), rows[-1]
                table[n].append((solved, at_quarters(rows, args.total_steps), last["global_step"] / last["wall_time"]))
                print(
                    f"seed {seed} learners {n}: solved at {solved}, final recent return {last['return_recent']:.2f}, "
                    f"{last['global_step']:,} steps, {table[n][-1][2]:,.0f} steps/s; load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
    rows = []
    for n, results in table.items():
        solved = [s for s, _, _ in results if s is not None]
        mean_solved = f"{statistics.mean(solved):,.0f}" if solved else "-"
        quarters = [statistics.mean(q[i] for _, q, _ in results) for i in range(4)]
        print(
            f"{n} learner(s): recent return at 1/4, 1/2, 3/4, all of the budget (mean of {len(results)} seeds) "
            f"{', '.join(f'{q:.2f}' for q in quarters)}; solved in {len(solved)}/{len(results)} seeds, mean step "
            f"{mean_solved}; steps/s {statistics.mean(s for _, _, s in results):,.0f}"
        )
        finals = ", ".join(f"{q[3]:.2f}" for _, q, _ in results)
        found = f" ({', '.join(short(x) for x in solved)})" if solved else ""
        label = f"{args.env}, {short(args.total_steps)}, seeds {' '.join(map(str, args.seeds))}" if not rows else ""
        rows.append([label, n, *(f"{q:.2f}" for q in quarters[:3]), f"{quarters[3]:.2f} ({finals})"])
        rows[-1].append(f"{len(solved)} of {len(results)}{found}")
    if args.write:
        from results import load, machine, publish

        columns = ["env, budget, seeds", "learners", "1/4", "1/2", "3/4", "end", "solved (recent mean >= target)"]
        meta = {"command": " ".join(["python", "benchmarks/learners_curves.py", *sys.argv[1:]]), "machine": machine()}
        publish(args.write, columns, rows, {**meta, "load": load(), "peer": "one learner"}, True, align="lrrrrrl")
    output = args.plot or f"{args.env.replace('/', '-')}-learners.png"
    print(f"uptime after: {os.getloadavg()}; plot: {plot_means(runs, output)}")


if __name__ == "__main__":
    main()
