"""Each env's GPU profile (``TrainDefaults.gpu_config``) trained to its measure, over seeds.

    .venv/bin/python benchmarks/gpu_profiles.py [--envs ocean/pong ...] [--seeds 1 2 3] [--jobs 2]
        [--torch-threads 1] [--out benchmarks/results/gpu_profiles] [--set SECTION.KEY=VALUE ...]

Every run is ``pufferbox train ENV --profile gpu --seed S`` with ``train.stop_on_solve``, timed from
launch to exit (interpreter start, envs and policy built, training, checkpoint written): what a user
waits for. On a machine with a GPU the profile is what ``--profile auto`` picks anyway; on a CPU it
checks that the profile learns. From the run's metrics.jsonl: the steps and updates at the end (at the
solve for envs with a ``solved_return``), steps/s over the wall time, and the update's share of the
training time (``time_learn``). ``load`` is the 1-minute load average as the run ends.

Tag has no ``solved_return`` (two groups in self-play): its measure is the tagger against the
update-0 runners, frozen at their random initialization (``league.frozen``), a fixed opponent the
tagger must learn to catch: the first update at which the taggers' mean episode return (tags per
100-step episode), over an update that ends at least :data:`TAG_EPISODES` episodes (the envs' games end
together every 100 steps; the few that end early, every runner caught, would skew it), reaches
:data:`TAG_TARGET`, 1.4x the untrained tagger's rate against the same runners (0.72 per 100 steps:
``tag_rate`` 0.0072 per env and step in the first update); the run is then stopped as Ctrl-C stops it
(a checkpoint, exit 0). It steps on the kernels' host simulator (``--backend cuda --set
vec.device=host``; the GPU run drops that for the GPU).

Writes OUT.json (every run, rewritten after each one so a run cut short keeps the finished ones; runs of
envs and seeds not run this time are kept; beside them the table RESULTS.md renders from them: its
columns, rows and metadata) and OUT.md (that table). When RESULTS.md shows OUT.json's table (the default
OUT, ``benchmarks/results/gpu_profiles``), it is re-rendered after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import render_results
import results

ENVS = ["ocean/pong", "ocean/breakout", "ocean/snake", "cartpole", "tag"]
TAG_TARGET = 1.0  # tags per episode by the tagger against the frozen update-0 runners
TAG_EPISODES = 1000  # ... over an update that ends at least this many episodes (Tag's games end together)
# settings a profile is measured with here beyond --profile gpu (Tag: the frozen runners, host kernels)
EXTRA = {
    "tag": [
        "--backend",
        "cuda",
        "--set",
        "vec.device=host",
        "--set",
        'league.frozen=["runner"]',
        "--set",
        "league.pool=none",
    ],
}
ROOT = Path(__file__).resolve().parents[1]


def pufferbox() -> list[str]:
    """The ``pufferbox`` console script beside this interpreter (else on PATH)."""
    script = Path(sys.executable).parent / "pufferbox"
    return [str(script)] if script.exists() else ["pufferbox"]


def read_metrics(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:  # a line the trainer is still writing
            break
    return rows


def measure(env: str, rows: list[dict]) -> dict:
    """Steps and updates to the env's measure (None where not reached) and the last row's figures."""
    if not rows:
        return {"reached": False, "steps_to_measure": None, "updates_to_measure": None}
    if env == "tag":
        cohorts = [r for r in rows if r.get("episodes", 0) >= TAG_EPISODES]  # not the few games ended early
        hit = next((r for r in cohorts if (r.get("tagger/episode_return") or 0.0) >= TAG_TARGET), None)
        best = max([r.get("tagger/episode_return") or 0.0 for r in cohorts], default=0.0)
        extra = {"measure": f"tagger tags/episode >= {TAG_TARGET} vs frozen update-0 runners", "best": round(best, 3)}
    else:
        hit = next((r for r in rows if r.get("solved")), None)
        extra = {"measure": "solved_return", "best": max((r.get("return_recent") or -1e9) for r in rows)}
    return {
        "reached": hit is not None,
        "steps_to_measure": hit["global_step"] if hit else None,
        "updates_to_measure": hit["update"] if hit else None,
        **extra,
    }


def one_run(env: str, seed: int, threads: int, overrides: list[str], device: str | None) -> dict:
    run_dir = Path(tempfile.mkdtemp(prefix="gpu-profile-")) / "run"
    command = [*pufferbox(), "train", env, "--profile", "gpu", "--seed", str(seed), "--run-dir", str(run_dir)]
    command += ["--no-tensorboard", "--set", "train.stop_on_solve=true", *EXTRA.get(env, [])]
    command += ["--set", f"train.torch_threads={threads}"] if threads else []
    command += ["--device", device] if device else []
    for text in overrides:
        command += ["--set", text]
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=stdout, stderr=stderr, text=True)
        while proc.poll() is None:  # an env without a solved_return stops at its measure, as Ctrl-C stops it
            time.sleep(1.0)
            if env == "tag" and measure(env, read_metrics(run_dir))["reached"]:
                proc.send_signal(signal.SIGINT)
                proc.wait()
        wall = time.perf_counter() - start
        stdout.seek(0)
        stderr.seek(0)
        out, err = stdout.read(), stderr.read()
    load = os.getloadavg()[0]
    rows = read_metrics(run_dir)
    last = rows[-1] if rows else {}
    plan = next((line for line in out.splitlines() if line.startswith("plan for")), "")
    train_time = last.get("wall_time") or 0.0
    result = {
        "env": env,
        "seed": seed,
        "rc": proc.returncode,
        "steps": last.get("global_step"),
        "updates": last.get("update"),
        **measure(env, rows),
        "wall_s": round(wall, 1),
        "train_s": round(train_time, 1),
        "steps_per_s": round(last["global_step"] / wall) if rows else None,
        "learn_share": round(last.get("time_learn", 0.0) / train_time, 3) if train_time else None,
        "load": round(load, 2),
        "plan": plan,
        "command": " ".join(command[1:]).replace(str(run_dir), "DIR"),
    }
    if proc.returncode != 0:
        result["error"] = (err.strip().splitlines() or [""])[-1][:300]
    shutil.rmtree(run_dir.parent, ignore_errors=True)
    return result


COLUMNS = ["env", "seed", "reached", "steps to measure", "updates", "wall s", "steps/s", "update share", "load"]
ALIGN = "lrlrrrrrr"


def table_rows(runs: list[dict]) -> list[list[str]]:
    out = []
    for r in sorted(runs, key=lambda r: (ENVS.index(r["env"]) if r["env"] in ENVS else 99, r["env"], r["seed"])):
        steps = f"{r['steps_to_measure']:,}" if r["steps_to_measure"] else f"not at {r['steps'] or 0:,}"
        share = f"{r['learn_share']:.0%}" if r.get("learn_share") is not None else "-"
        sps = f"{r['steps_per_s']:,}" if r.get("steps_per_s") else "-"
        updates = r["updates_to_measure"] or r["updates"]
        out.append(
            [r["env"], str(r["seed"]), "yes" if r["reached"] else "no", steps, str(updates), str(r["wall_s"])]
            + [sps, share, str(r["load"])]
        )
    return out


def table_data(runs: list[dict], meta: dict) -> dict:
    """The keys RESULTS.md's table is rendered from (``render_results``), beside the raw runs."""
    return {"meta": meta, "columns": COLUMNS, "align": list(ALIGN), "rows": table_rows(runs)}


def table(runs: list[dict]) -> str:
    return render_results.render_table(table_data(runs, {}))


def save_runs(out: Path, machine: dict, meta: dict, runs: list[dict]) -> None:
    """OUT.json (raw runs and the table's data) and OUT.md; re-render RESULTS.md if it shows OUT.json."""
    json_path = out.with_suffix(".json")
    data = {"machine": machine, "runs": runs, **table_data(runs, meta)}
    json_path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    out.with_suffix(".md").write_text(table(runs))
    try:
        rel = json_path.resolve().relative_to(results.RESULTS.parent).as_posix()
    except ValueError:
        return
    if rel in render_results.references(results.RESULTS.read_text()):
        render_results.render_file(results.RESULTS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=ENVS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--jobs", type=int, default=1, help="runs side by side")
    parser.add_argument("--torch-threads", type=int, default=0, help="train.torch_threads per run (0: auto)")
    parser.add_argument("--device", help="--device for every run (default: the run's own, auto)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/gpu_profiles"), help="OUT.json and OUT.md")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE")
    args = parser.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {
        (r["env"], r["seed"]): r
        for r in (json.loads(out.with_suffix(".json").read_text())["runs"] if out.with_suffix(".json").exists() else [])
    }
    machine = {
        "cpus": os.cpu_count(),
        "load_before": [round(x, 2) for x in os.getloadavg()],
        "date": time.strftime("%Y-%m-%d"),
    }

    meta = {
        "command": " ".join([".venv/bin/python", "benchmarks/gpu_profiles.py", *sys.argv[1:]]),
        "machine": results.machine(),
        "load": f"{results.load()} before; per row in the table",
        "date": machine["date"],
    }

    def save(result: dict) -> None:
        done[(result["env"], result["seed"])] = result
        save_runs(out, machine, meta, list(done.values()))
        print(json.dumps(result), flush=True)

    jobs = [(env, seed) for env in args.envs for seed in args.seeds]
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = [pool.submit(one_run, env, seed, args.torch_threads, args.overrides, args.device) for env, seed in jobs]
        for future in as_completed(futures):
            save(future.result())
    print(table(list(done.values())))


if __name__ == "__main__":
    main()
