"""Training steps/s and return: `pufferbox train` side by side with the peers' own published trainers.

Each peer runs its unmodified code in its own venv (created by ``--setup`` under
``$PUFFERBOX_PEERS_DIR``, default ``/tmp/pufferbox-peers``; see ``benchmarks/peer_venvs.py``):

    breakout  CleanRL 1.2.0 ``ppo_atari_envpool.py`` (NatureCNN, envpool 0.8.4, gym 0.23.1)
    bigfish   CleanRL 1.2.0 ``ppo_procgen.py`` (IMPALA CNN, procgen-mirror 0.10.7)
    nethack   PufferLib 3.0.0's trainer and NetHack policy (``benchmarks/pufferlib_train_peer.py``)

and pufferbox twice: with its defaults, and "matched" (``--set`` the peer's env count, rollout
length, epochs, minibatches and learning rate). Every arm is a fresh process; arms are
interleaved per seed so that all see the same background load, and the load average is
recorded before and after each.

    .venv/bin/python benchmarks/bench_train_peers.py --setup
    .venv/bin/python benchmarks/bench_train_peers.py --envs breakout,bigfish,nethack \\
        --budget breakout=20000 --budget bigfish=10000 --budget nethack=12000 --seeds 1 2 3 --write

Per arm: steady-state training steps/s (first update excluded: from the end of update 1 to the
end of the last), the env / inference / update seconds over the same updates where the trainer
reports them, and the mean return of the episodes that ended in the last quarter of the budget.
Long runs (millions of steps, hours each): ``--keep DIR`` keeps every run's directory, checkpoints
and log in DIR to read while it trains, and ``--parts 10`` adds a finer learning curve to each row.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer_venvs
import render_results
from results import load, machine, publish

ROOT = Path(__file__).resolve().parent.parent
PUFFERBOX = (str(Path(sys.executable).with_name("pufferbox")),)
LAUNCHER = Path(__file__).resolve().parent / "pufferlib_train_peer.py"


@dataclass(frozen=True)
class Peer:
    """One env's peer: its command line (built by ``peer_command``) and the hyperparameters "matched" copies."""

    env: str  # pufferbox env name
    name: str
    num_envs: int
    num_steps: int
    update_epochs: int
    num_minibatches: int
    learning_rate: float | None  # None: not transferable (PufferLib trains with Muon, not Adam)
    return_unit: str
    notes: str = ""


# arms that are the defaults plus settings (pufferbox only)
ARM_SETTINGS: dict[str, tuple[str, ...]] = {"bf16": ("train.autocast=bf16",)}

PEERS = {
    "breakout": Peer(
        "breakout", "CleanRL ppo_atari_envpool.py", 8, 128, 4, 4, 2.5e-4, "raw game score", "NatureCNN, envpool Breakout-v5"
    ),
    # CleanRL's 64 envs x 256 steps make 16k-step batches; 32 steps leave several updates in a CPU budget
    "bigfish": Peer(
        "procgen/bigfish", "CleanRL ppo_procgen.py", 64, 32, 3, 8, 5e-4, "raw game score", "IMPALA CNN, procgen easy"
    ),
    # nethack.ini is for a GPU box (128 envs, 16 workers, 8192-step batches); scaled to 2 cores: Serial
    # backend (its Multiprocessing spins on 2 shared cores), 16 envs x its bptt 64, its 4 minibatches, 1 epoch
    "nethack": Peer(
        "nethack",
        "PufferLib 3.0 trainer",
        16,
        64,
        1,
        4,
        None,
        "NetHackScore",
        "its NetHack policy, Muon lr 0.015, Serial backend",
    ),
}


@dataclass
class Run:
    """What one arm measured: per-update (global_step, seconds) marks, phase seconds and episodes."""

    marks: list[tuple[int, float]] = field(default_factory=list)
    phases: dict[str, float] | None = None  # env / inference / update seconds after the first update
    episodes: list[tuple[int, float]] = field(default_factory=list)  # (global_step at end, return)
    wall_s: float = 0.0
    return_unit: str = ""

    def steady_sps(self) -> float | None:
        if len(self.marks) < 2:
            return None
        (s0, t0), (s1, t1) = self.marks[0], self.marks[-1]
        return (s1 - s0) / max(t1 - t0, 1e-9)

    def spans(self, budget: int, parts: int = 4) -> list[list[float]]:
        """The returns of the episodes that ended in each of ``parts`` equal spans of the budget (overshoot: the last)."""
        spans: list[list[float]] = [[] for _ in range(parts)]
        for step, r in self.episodes:
            spans[min(max(step - 1, 0) * parts // budget, parts - 1)].append(r)
        return spans

    def final_return(self, budget: int) -> tuple[float | None, int]:
        late = self.spans(budget)[-1]
        return (statistics.fmean(late) if late else None), len(late)

    def curve(self, budget: int, parts: int = 4) -> list[tuple[float | None, int]]:
        """(mean return, episodes) per span of the budget: a learning curve."""
        return [((round(statistics.fmean(s), 2) if s else None), len(s)) for s in self.spans(budget, parts)]


def run_logged(cmd: list[str], cwd: Path, env: dict, log: Path) -> tuple[list[tuple[float, str]], float]:
    """Runs ``cmd`` streaming its stdout into ``log``; returns (arrival time, line) pairs and the wall time."""
    start = time.perf_counter()
    lines = []
    with (
        log.open("w", buffering=1) as out,
        subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        ) as proc,
    ):
        for line in proc.stdout:
            lines.append((time.perf_counter() - start, line))
            out.write(line)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = "".join(line for _, line in lines[-25:])
        raise RuntimeError(f"{cmd[0]} {' '.join(cmd[1:3])} exited {proc.returncode} (log {log}):\n{tail}")
    return lines, wall


def thread_env(threads: int | None) -> dict:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if threads:
        env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return env


def run_pufferbox(
    peer: Peer,
    matched: bool,
    seed: int,
    budget: int,
    threads: int | None,
    work: Path,
    pufferbox: tuple[str, ...] | list[str] = PUFFERBOX,
    extra: tuple[str, ...] = (),
) -> Run:
    """``pufferbox train`` (its defaults, or the peer's settings via ``--set``, plus ``extra`` settings);
    reads RUN_DIR/metrics.jsonl."""
    label = "matched" if matched else "-".join(["defaults", *extra])  # whole settings: arms never share a run dir
    run_dir = work / f"pufferbox-{label}-{peer.env.replace('/', '-')}-{seed}"
    sets = list(extra)
    if matched:
        sets += [
            f"vec.num_envs={peer.num_envs}",
            f"train.num_steps={peer.num_steps}",
            f"train.update_epochs={peer.update_epochs}",
            f"train.num_minibatches={peer.num_minibatches}",
        ]
        sets += [f"train.learning_rate={peer.learning_rate}"] if peer.learning_rate is not None else []
    if threads:
        sets.append(f"train.torch_threads={threads}")
    cmd = [
        *pufferbox,
        "train",
        peer.env,
        "--seed",
        str(seed),
        "--total-steps",
        str(budget),
        "--run-dir",
        str(run_dir),
        "--no-tensorboard",
        *[a for s in sets for a in ("--set", s)],
    ]
    _, wall = run_logged(cmd, ROOT, thread_env(None), work / f"{run_dir.name}.log")
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    run = Run(marks=[(m["global_step"], m["wall_time"]) for m in metrics], wall_s=wall)
    if len(metrics) >= 2 and "time_env" in metrics[0]:
        first, last = metrics[0], metrics[-1]
        run.phases = {
            phase: last[f"time_{key}"] - first[f"time_{key}"]
            for phase, key in (("env", "env"), ("inference", "inference"), ("update", "learn"))
        }
    raw_key = next((k for k in ("episode_raw_episode_return", "raw_episode_return") if any(k in m for m in metrics)), None)
    # pufferbox trains Atari on clipped rewards with a life loss ending the episode; unless its metrics
    # carry the raw game score, its breakout returns are not in the peer's unit (whole-game raw score)
    run.return_unit = "raw game score" if raw_key else ("clipped, per life" if peer.env == "breakout" else peer.return_unit)
    for m in metrics:  # per-update means; weight each by the count of episodes (games, for raw scores) behind it
        value = m.get(raw_key) if raw_key else m.get("episode_return")
        count = m.get(raw_key.replace("episode_", "episodes_", 1)) if raw_key else None
        if value is not None:
            run.episodes += [(m["global_step"], value)] * int(count or m.get("episodes") or 1)
    return run


def run_cleanrl(peer: Peer, seed: int, budget: int, threads: int | None, work: Path) -> Run:
    """CleanRL's unmodified script; SPS lines timestamped on arrival, returns from its episodic_return lines."""
    script = {"breakout": "ppo_atari_envpool.py", "procgen/bigfish": "ppo_procgen.py"}[peer.env]
    env_id = {"breakout": "Breakout-v5", "procgen/bigfish": "bigfish"}[peer.env]
    python = peer_venvs.python_of(peer_venvs.CLEANRL_VENV)
    cmd = [
        str(python),
        str(peer_venvs.cleanrl_script(script)),
        "--env-id",
        env_id,
        "--seed",
        str(seed),
        "--total-timesteps",
        str(budget),
        "--num-envs",
        str(peer.num_envs),
        "--num-steps",
        str(peer.num_steps),
        "--cuda",
        "False",
    ]
    cwd = work / f"cleanrl-{env_id}-{seed}"  # it writes runs/ into its working directory
    cwd.mkdir()
    lines, wall = run_logged(cmd, cwd, thread_env(threads), work / f"{cwd.name}.log")
    run, step = Run(wall_s=wall, return_unit=peer.return_unit), 0
    for t, line in lines:
        if match := re.match(r"global_step=(\d+), episodic_return=\[?([-\d.e]+)", line):
            step = int(match.group(1))
            run.episodes.append((step, float(match.group(2))))
        elif line.startswith("SPS:"):
            # the script prints SPS once per update; the update's last step is num_envs * num_steps * k
            run.marks.append(((len(run.marks) + 1) * peer.num_envs * peer.num_steps, t))
    return run


def run_pufferlib(peer: Peer, seed: int, budget: int, threads: int | None, work: Path) -> Run:
    """PufferLib's trainer via ``pufferlib_train_peer.py``: its per-update JSON lines give marks and phases."""
    python = peer_venvs.python_of(peer_venvs.PUFFERLIB_VENV)
    batch = peer.num_envs * peer.num_steps
    log = work / f"pufferlib-nethack-{seed}.jsonl"
    cmd = [
        str(python),
        str(LAUNCHER),
        str(log),
        "train",
        "nethack",
        "--train.device",
        "cpu",
        "--vec.backend",
        "Serial",
        "--vec.num-envs",
        str(peer.num_envs),
        "--vec.num-workers",
        "1",
        "--vec.batch-size",
        str(peer.num_envs),
        "--train.batch-size",
        str(batch),
        "--train.bptt-horizon",
        str(peer.num_steps),
        "--train.minibatch-size",
        str(batch // peer.num_minibatches),
        "--train.update-epochs",
        str(peer.update_epochs),
        "--train.total-timesteps",
        str(budget),
        "--train.seed",
        str(seed),
        "--vec.seed",
        str(seed),
        "--train.data-dir",
        str(work / "puffer-experiments"),
        "--train.checkpoint-interval",
        "1000000",
    ]
    _, wall = run_logged(cmd, work, thread_env(threads), work / f"pufferlib-nethack-{seed}.log")
    updates = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    run = Run(marks=[(u["global_step"], u["t"]) for u in updates], wall_s=wall, return_unit=peer.return_unit)
    if len(updates) >= 2:
        first, last = updates[0], updates[-1]
        env_s = last["env_s"] - first["env_s"]
        run.phases = {
            "env": env_s,
            "inference": last["collect_s"] - first["collect_s"] - env_s,
            "update": last["learn_s"] - first["learn_s"],
        }
    run.episodes = [(u["global_step"], r) for u in updates for r in u["returns"]]
    return run


def run_arm(
    arm: str,
    peer: Peer,
    seed: int,
    budget: int,
    threads: int | None,
    work: Path,
    pufferbox: tuple[str, ...] | list[str] = PUFFERBOX,
    parts: int = 4,
) -> dict:
    load_before = os.getloadavg()
    if arm == "peer":
        runner = run_pufferlib if peer.env == "nethack" else run_cleanrl
        run = runner(peer, seed, budget, threads, work)
    else:
        extra = ARM_SETTINGS.get(arm, ())
        run = run_pufferbox(peer, arm == "matched", seed, budget, threads, work, pufferbox, extra)
    mean_return, episodes = run.final_return(budget)
    sps = run.steady_sps()
    return {
        "env": peer.env,
        "arm": arm,
        "seed": seed,
        "budget": budget,
        "steps": run.marks[-1][0] if run.marks else 0,
        "updates": len(run.marks),
        "steady_sps": sps and round(sps, 1),
        "wall_s": round(run.wall_s, 1),
        "phases": run.phases and {k: round(v, 2) for k, v in run.phases.items()},
        "return_last_quarter": mean_return and round(mean_return, 2),
        "episodes_last_quarter": episodes,
        "return_by_quarter": run.curve(budget),
        **({f"return_by_{parts}ths": run.curve(budget, parts)} if parts != 4 else {}),
        "return_unit": run.return_unit,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def median_of(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r[key] is not None]
    return statistics.median(values) if values else None


def fmt(value: float | None, digits: int = 0) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def phase_text(rows: list[dict]) -> str:
    phases = [r["phases"] for r in rows if r["phases"]]
    if not phases:
        return "not reported"
    return " / ".join(f"{statistics.median(p[k] for p in phases):.1f}" for k in ("env", "inference", "update"))


def loads_text(rows: list[dict]) -> str:
    return ", ".join(f"{r['load_before'][0]:.1f}→{r['load_after'][0]:.1f}" for r in rows)


COLUMNS = [
    "env",
    "arm",
    "steady steps/s",
    "vs peer",
    "env / inference / update s",
    "return, last quarter (episodes)",
    "return unit",
    "load (1 min) before→after",
]
ALIGN = "llrrlrll"


def table_rows(results: list[dict]) -> list[list[str]]:
    """One row per env and arm, medians over seeds, ratio to the peer's steady steps/s."""
    out = []
    for env in dict.fromkeys(r["env"] for r in results):
        peer = next(p for p in PEERS.values() if p.env == env)
        peer_sps = median_of([r for r in results if r["env"] == env and r["arm"] == "peer"], "steady_sps")
        for arm in ("peer", "defaults", "matched", *ARM_SETTINGS):
            rows = [r for r in results if r["env"] == env and r["arm"] == arm]
            if not rows:
                continue
            sps = median_of(rows, "steady_sps")
            ratio = f"{sps / peer_sps:.2f}x" if sps and peer_sps else "n/a"
            label = peer.name if arm == "peer" else f"pufferbox {arm}"
            ret = median_of(rows, "return_last_quarter")
            episodes = sum(r["episodes_last_quarter"] for r in rows)
            out.append(
                [env, label, fmt(sps), ratio, phase_text(rows), f"{fmt(ret, 2)} ({episodes})"]
                + [rows[0].get("return_unit", ""), loads_text(rows)]
            )
    return out


def table(results: list[dict]) -> str:
    """The Markdown table, as RESULTS.md shows it."""
    return render_results.render_table({"columns": COLUMNS, "align": ALIGN, "rows": table_rows(results)})


def parse_budgets(items: list[str], envs: list[str]) -> dict[str, int]:
    budgets = {"breakout": 20_000, "bigfish": 10_000, "nethack": 12_000}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:  # a bare number applies to every env
            budgets = dict.fromkeys(budgets, int(item))
        elif name not in budgets:
            raise SystemExit(f"Error: --budget {item}: unknown env {name!r}; envs are {', '.join(budgets)}")
        else:
            budgets[name] = int(value)
    return {env: budgets[env] for env in envs}


def check_peers(envs: list[str]) -> None:
    """Fails fast, naming --setup, when a peer venv or script this run needs is absent."""
    try:
        if {"breakout", "bigfish"} & set(envs):
            peer_venvs.python_of(peer_venvs.CLEANRL_VENV)
            peer_venvs.cleanrl_script("ppo_atari_envpool.py")
        if "nethack" in envs:
            peer_venvs.python_of(peer_venvs.PUFFERLIB_VENV)
    except peer_venvs.PeerMissing as exc:
        raise SystemExit(f"Error: {exc}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup", action="store_true", help=f"create the peer venvs under {peer_venvs.PEERS_DIR}")
    parser.add_argument("--envs", default="breakout,bigfish,nethack")
    parser.add_argument(
        "--budget",
        action="append",
        default=[],
        metavar="[ENV=]STEPS",
        help="training steps per run (default breakout=20000, bigfish=10000, nethack=12000)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--arms", default="peer,defaults,matched")
    parser.add_argument(
        "--arm",
        action="append",
        default=[],
        metavar="NAME=KEY=VALUE[,KEY=VALUE...]",
        help="an extra pufferbox arm: the defaults plus these settings (e.g. e2=train.update_epochs=2); name it in --arms",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch threads for every arm (OMP_NUM_THREADS for the peers); 0: each tool's default",
    )
    parser.add_argument(
        "--pufferbox",
        default=PUFFERBOX[0],
        help="the pufferbox command the pufferbox arms run (default: the one next to this Python; "
        "it imports whatever pufferbox PYTHONPATH/the venv provides)",
    )
    parser.add_argument("--write", action="store_true", help="write the table's JSON and re-render RESULTS.md")
    parser.add_argument(
        "--parts",
        type=int,
        default=4,
        help="also report each run's learning curve over this many equal spans of the budget (default: quarters only)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="run in this new directory and keep it (run dirs, checkpoints, logs) instead of a temporary one",
    )
    args = parser.parse_args()
    envs = [e.strip() for e in args.envs.split(",") if e.strip()]
    if unknown := [e for e in envs if e not in PEERS]:
        raise SystemExit(f"Error: --envs: unknown {', '.join(unknown)}; choose from {', '.join(PEERS)}")
    if args.setup:
        peer_venvs.setup(
            [*(["cleanrl"] if {"breakout", "bigfish"} & set(envs) else []), *(["pufferlib"] if "nethack" in envs else [])]
        )
        return
    for item in args.arm:
        name, sep, settings = item.partition("=")
        if not sep or "=" not in settings:
            raise SystemExit(f"Error: --arm {item}: expected NAME=KEY=VALUE[,KEY=VALUE...], e.g. e2=train.update_epochs=2")
        ARM_SETTINGS[name] = tuple(s.strip() for s in settings.split(","))
    budgets, arms = parse_budgets(args.budget, envs), [a.strip() for a in args.arms.split(",")]
    if bad := [a for a in arms if a not in ("peer", "defaults", "matched", *ARM_SETTINGS)]:
        known = ", ".join(("peer", "defaults", "matched", *ARM_SETTINGS))
        raise SystemExit(f"Error: --arms: unknown {', '.join(bad)}; choose from {known} (or add one with --arm)")
    if args.parts < 1:  # every check of the command line comes before any check of the machine
        raise SystemExit(f"Error: --parts {args.parts}: needs at least 1 span, e.g. --parts 10")
    if args.keep is not None and args.keep.exists():
        if not args.keep.is_dir():
            raise SystemExit(f"Error: --keep {args.keep}: is a file; name a new or empty directory")
        if any(args.keep.iterdir()):
            raise SystemExit(f"Error: --keep {args.keep}: not empty; name a new or empty directory so no run is overwritten")
    if "peer" in arms:
        check_peers(envs)
    threads, pufferbox = args.threads or None, args.pufferbox.split()
    results = []
    workspace: contextlib.AbstractContextManager[str]
    if args.keep is None:
        workspace = tempfile.TemporaryDirectory(prefix="bench-peers-")
    else:
        args.keep.mkdir(parents=True, exist_ok=True)
        workspace = contextlib.nullcontext(str(args.keep))
    with workspace as work_dir:
        work = Path(work_dir)
        for seed in args.seeds:  # interleaved, so every arm sees the same background load
            for env in envs:
                for arm in arms:
                    row = run_arm(arm, PEERS[env], seed, budgets[env], threads, work, pufferbox, parts=args.parts)
                    results.append(row)
                    print(json.dumps(row), flush=True)
    command = " ".join(["benchmarks/bench_train_peers.py", *sys.argv[1:]])
    peers = "; ".join(f"{p.name} ({p.notes}, {p.num_envs} envs x {p.num_steps})" for k, p in PEERS.items() if k in envs)
    threads_text = f"{threads} (OMP_NUM_THREADS for the peers)" if threads else "each trainer's default"
    meta = {
        "command": f".venv/bin/python {command}",
        "machine": machine(),
        "load": f"{load()} (at the end); per row in the table",
        "peer": f"{peers}; torch threads: {threads_text}",
    }
    publish("train_peers", COLUMNS, table_rows(results), meta, args.write, align=ALIGN)


if __name__ == "__main__":
    main()
