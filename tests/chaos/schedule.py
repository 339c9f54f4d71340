"""A seeded fault schedule: what to break, when, and the invariants checked after every round.

A round starts a ``pufferbox train`` subprocess in its own session, breaks it at a random moment
(a signal to the trainer, a worker or a Ray rollout actor, an env fault, a full disk), waits for it
with a deadline, and then checks: no process of its tree is left, no ``/dev/shm/pufferbox_<pid>_*``
segment, no temp file; the run dir resumes (or is refused in one ``Error:`` line, exit 2), never
from a checkpoint with non-finite weights. Every event is logged; a failure dumps the log and the
seed (``PUFFERBOX_CHAOS_SEED=N python -m pytest tests/chaos`` replays it).

Example:
    >>> s = Schedule(7)
    >>> s.log("start"); "PUFFERBOX_CHAOS_SEED=7" in s.dump()
    True
"""

from __future__ import annotations

import glob
import json
import math
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

import psutil
import torch

HERE = Path(__file__).parent
SIGNAL_FAULTS = ["sigkill_trainer", "sigterm_trainer", "sigstop_trainer", "poison_checkpoint"]
# on the serial backend an os._exit ends the trainer itself and a hang has no deadline (no process to stop):
# those two env faults run on multiprocessing, like the worker faults; an env that raises runs on either
WORKER_FAULTS = ["sigkill_worker", "sigstop_worker", "sigterm_worker", "env_hang", "env_exit"]
ENV_FAULTS = ["env_raise", "env_exit", "env_nan_reward", "env_hang"]
FAULTS = SIGNAL_FAULTS + WORKER_FAULTS[:3] + ENV_FAULTS
STEP_TIMEOUT = 3.0
WAIT = 90.0  # seconds any one subprocess may take before the round fails


class ChaosFailure(AssertionError):
    """An invariant broke; the message carries the seed and the schedule so far."""


class Schedule:
    """The seeded random source and the log of one chaos run."""

    def __init__(self, seed: int):
        self.seed, self.rng, self.events, self.t0 = seed, random.Random(seed), [], time.monotonic()

    def log(self, what: str) -> None:
        self.events.append(f"{time.monotonic() - self.t0:7.2f}s  {what}")

    def dump(self) -> str:
        return (
            f"chaos seed {self.seed} (replay: PUFFERBOX_CHAOS_SEED={self.seed} python -m pytest tests/chaos)\n"
            + "\n".join(self.events)
        )

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.log(f"FAILED: {what}")
            raise ChaosFailure(self.dump())


def chaos_seed() -> int:
    return int(os.environ.get("PUFFERBOX_CHAOS_SEED") or random.SystemRandom().randrange(2**31))


def chaos_rounds(default: int) -> int:
    return int(os.environ.get("PUFFERBOX_CHAOS_ROUNDS") or default)


def plugin_env(tmp: Path, fault: str | None = None) -> dict[str, str]:
    """The environment of a chaos subprocess: the ``chaosfault`` env plugin visible, ``fault`` armed."""
    site = tmp / "chaos-site"
    info = site / "pufferbox_chaos-0.1.0.dist-info"
    if not info.exists():
        info.mkdir(parents=True)
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pufferbox-chaos\nVersion: 0.1.0\n")
        (info / "entry_points.txt").write_text("[pufferbox]\nchaos = pufferbox_chaos\n")
    path = os.pathsep.join([str(HERE / "plugin"), str(site), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "PUFFERBOX_PLUGINS": "classic,chaos", "PYTHONUNBUFFERED": "1"}
    env.pop("PUFFERBOX_CHAOS_FAULT", None)
    if fault:
        env["PUFFERBOX_CHAOS_FAULT"] = fault
    return env


class Tracked:
    """A ``pufferbox`` subprocess in its own session; a thread records every pid of its tree.

    ``command`` replaces ``python -m pufferbox ARGS`` (e.g. a shell that mounts a small tmpfs first)."""

    def __init__(self, args: list[str], env: dict[str, str], schedule: Schedule, command: list[str] | None = None):
        self.schedule = schedule
        self.proc = subprocess.Popen(
            command or [sys.executable, "-m", "pufferbox", *args],
            env=env,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.seen: dict[int, psutil.Process] = {}
        self.out = self.err = ""
        schedule.log(f"start pid {self.proc.pid}: pufferbox {' '.join(args)}")
        self.thread = threading.Thread(target=self.watch, daemon=True)
        self.thread.start()

    def watch(self) -> None:
        while self.proc.poll() is None:
            try:
                root = psutil.Process(self.proc.pid)
                for p in [root, *root.children(recursive=True)]:
                    self.seen.setdefault(p.pid, p)
            except psutil.Error:
                pass
            time.sleep(0.05)

    def workers(self) -> list[psutil.Process]:
        """Live direct children that are env workers (not multiprocessing's resource tracker or forkserver)."""
        try:
            kids = psutil.Process(self.proc.pid).children()
            return [k for k in kids if not any(w in " ".join(k.cmdline()) for w in ("resource_tracker", "forkserver"))]
        except psutil.Error:
            return []

    def signal(self, sig: signal.Signals, pid: int | None = None) -> None:
        self.schedule.log(f"{sig.name} -> pid {pid or self.proc.pid}{' (worker)' if pid else ''}")
        try:
            os.kill(pid or self.proc.pid, sig)
        except ProcessLookupError:
            self.schedule.log("  (already gone)")

    def wait(self, timeout: float = WAIT) -> int:
        try:
            self.out, self.err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.out, self.err = self.proc.communicate(timeout=30)
            self.schedule.log(f"pid {self.proc.pid} still running after {timeout:.0f} s: killed its group")
            self.schedule.check(False, f"a subprocess outlived its deadline\n{self.tail()}")
        self.thread.join(timeout=5)
        self.schedule.log(f"pid {self.proc.pid} exited {self.proc.returncode}")
        return self.proc.returncode

    def tail(self) -> str:
        return f"--- stdout ---\n{self.out[-2000:]}\n--- stderr ---\n{self.err[-3000:]}"

    def wait_for_lines(self, run_dir: Path, lines: int, timeout: float = WAIT) -> bool:
        """Wait until ``metrics.jsonl`` has ``lines`` lines; False if the process ended first."""
        path, deadline = run_dir / "metrics.jsonl", time.monotonic() + timeout
        while not path.exists() or len(path.read_text().splitlines()) < lines:
            if self.proc.poll() is not None:
                return False
            self.schedule.check(time.monotonic() < deadline, f"no {lines} metric lines in {timeout:.0f} s")
            time.sleep(0.05)
        return True


def assert_nothing_left(t: Tracked, run_dir: Path | None) -> None:
    """No process of the tree, no shared-memory segment it created, no temp file (unless SIGKILLed
    mid-write: then the next ``--resume`` removes it)."""
    s = t.schedule
    _, alive = psutil.wait_procs(list(t.seen.values()), timeout=15)
    s.check(not alive, f"processes left after pid {t.proc.pid}: {[(p.pid, p.status()) for p in alive]}")
    deadline = time.monotonic() + 10  # multiprocessing's resource tracker unlinks a killed owner's segments
    while left := [g for pid in t.seen for g in glob.glob(f"/dev/shm/pufferbox_{pid}_*")]:
        if time.monotonic() > deadline:
            s.check(False, f"shared-memory segments left: {left}")
        time.sleep(0.1)
    if run_dir is not None and run_dir.exists() and t.proc.returncode != -signal.SIGKILL:
        temps = [str(p) for p in run_dir.rglob("*.tmp")]
        s.check(not temps, f"temp files left: {temps}")


def finite(path: Path) -> bool:
    state = torch.load(path, map_location="cpu", weights_only=True)
    return all(torch.isfinite(v).all() for v in state["model"].values() if torch.is_tensor(v))


def checkpoints(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "checkpoints").glob("ckpt-*.pt"))


def assert_one_line_error(t: Tracked, *needles: str) -> str:
    lines = [line for line in t.err.strip().splitlines() if line.strip()]
    t.schedule.check(
        t.proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("Error: "),
        f"expected exit 2 with one `Error:` line, got {t.proc.returncode}\n{t.tail()}",
    )
    for needle in needles:
        t.schedule.check(needle in lines[0], f"{needle!r} not in {lines[0]!r}")
    return lines[0]


def assert_resumable(run_dir: Path, tmp: Path, s: Schedule, extra: list[str]) -> None:
    """``--resume`` continues from the newest finite checkpoint, or is refused in one line; never a traceback."""
    before = {p.name: finite(p) for p in checkpoints(run_dir)}
    mtimes = {p.name: p.stat().st_mtime_ns for p in checkpoints(run_dir)}
    s.log(f"checkpoints before resume: {before}")
    newest_finite = max((n for n, ok in before.items() if ok), default=None)
    t = Tracked(["train", "--resume", str(run_dir), "--total-steps", "1536", *extra], plugin_env(tmp), s)
    rc = t.wait()
    s.check("Traceback" not in t.out + t.err, f"traceback on resume\n{t.tail()}")
    if rc == 0:
        s.check(newest_finite is not None or not before, f"resumed from a non-finite checkpoint\n{t.tail()}")
        written = [p for p in checkpoints(run_dir) if mtimes.get(p.name) != p.stat().st_mtime_ns]
        s.check(
            bool(written) and all(finite(p) for p in written),
            f"a resumed run wrote no or a non-finite checkpoint: {[p.name for p in written]}",
        )
    else:
        assert_one_line_error(t)
        s.check(newest_finite is None or not before, f"refused although {newest_finite} is finite\n{t.tail()}")
    assert_nothing_left(t, run_dir)


def plan_trainer_round(rng: random.Random) -> dict:
    fault = rng.choice(FAULTS)
    backend = "multiprocessing" if fault in WORKER_FAULTS or rng.random() < 0.5 else "serial"
    return {
        "fault": fault,
        "backend": backend,
        "lines": rng.randint(1, 4),
        "delay": rng.uniform(0, 0.4),
        "fail_at": rng.randint(40, 400),
        "stop_s": rng.uniform(0.2, 1.5),
        "then": rng.choice(["cont", "kill"]),
        "interval": rng.choice([1, 2, 3]),
    }


def trainer_args(run_dir: Path, plan: dict) -> list[str]:
    env = "chaosfault" if plan["fault"].startswith("env_") else "cartpole"
    args = [
        "train",
        env,
        "--run-dir",
        str(run_dir),
        "--total-steps",
        "10000000",
        "--num-envs",
        "4",
        "--set",
        "train.num_steps=32",
        "--set",
        f"train.checkpoint_interval={plan['interval']}",
        "--set",
        "train.stop_on_solve=false",
        "--set",
        "policy.hidden_size=16",
        "--no-tensorboard",
        "--backend",
        plan["backend"],
        "--set",
        f"vec.step_timeout={STEP_TIMEOUT}",
    ]
    return args + (["--num-workers", "2"] if plan["backend"] == "multiprocessing" else [])


def break_trainer(t: Tracked, run_dir: Path, plan: dict) -> None:
    """Apply ``plan["fault"]`` to a running trainer (env faults need nothing: the env breaks itself)."""
    s, fault = t.schedule, plan["fault"]
    if fault.startswith("env_") or not t.wait_for_lines(run_dir, plan["lines"]):
        return
    time.sleep(plan["delay"])
    if fault in ("sigkill_trainer", "sigterm_trainer", "poison_checkpoint"):
        t.signal(signal.SIGKILL if fault == "sigkill_trainer" else signal.SIGTERM)
    elif fault == "sigstop_trainer":
        t.signal(signal.SIGSTOP)
        time.sleep(plan["stop_s"])
        if plan["then"] == "cont":
            t.signal(signal.SIGCONT)
            time.sleep(0.3)
            t.signal(signal.SIGTERM)
        else:
            t.signal(signal.SIGKILL)
    else:
        workers = t.workers()
        s.check(bool(workers), f"no worker processes under pid {t.proc.pid}")
        sig = {"sigkill_worker": signal.SIGKILL, "sigstop_worker": signal.SIGSTOP, "sigterm_worker": signal.SIGTERM}[fault]
        t.signal(sig, t.schedule.rng.choice(workers).pid)


EXPECTED_EXIT = {"sigkill_trainer": {-9}, "sigterm_trainer": {143}, "poison_checkpoint": {143}, "sigstop_trainer": {-9, 143}}


def check_trainer_exit(t: Tracked, run_dir: Path, plan: dict) -> None:
    s, fault, rc = t.schedule, plan["fault"], t.proc.returncode
    s.check("Traceback" not in t.out + t.err, f"traceback from the trainer\n{t.tail()}")
    if fault in EXPECTED_EXIT:
        if rc == 0 and not t.wait_for_lines(run_dir, 10**9, timeout=0.0):
            s.check(False, f"trainer finished before the fault\n{t.tail()}")
        s.check(rc in EXPECTED_EXIT[fault], f"{fault}: exit {rc}, expected {EXPECTED_EXIT[fault]}\n{t.tail()}")
        if rc == 143:
            s.check(bool(checkpoints(run_dir)), f"SIGTERM left no checkpoint\n{t.tail()}")
    else:  # a broken worker or env: one line naming it, exit 2
        needle = {
            "env_raise": "deliberate failure",
            "sigstop_worker": "step_timeout",
            "env_hang": "step_timeout",
            "env_nan_reward": "finite",
        }.get(fault, "")
        assert_one_line_error(t, needle)


def poison(run_dir: Path, s: Schedule) -> None:
    """Write a NaN copy of the newest checkpoint as a newer one (a poisoned model checkpointed)."""
    newest = checkpoints(run_dir)[-1]
    state = torch.load(newest, map_location="cpu", weights_only=True)
    for value in state["model"].values():
        if torch.is_tensor(value) and value.is_floating_point():
            value.fill_(math.nan)
    update = int(newest.stem.split("-")[1]) + 1
    torch.save(state, newest.with_name(f"ckpt-{update:08d}.pt"))
    s.log(f"poisoned: wrote NaN ckpt-{update:08d}.pt")


def trainer_round(s: Schedule, tmp: Path, index: int) -> None:
    """One round: start a trainer, break it per a random plan, check every invariant."""
    plan = plan_trainer_round(s.rng)
    run_dir = tmp / f"round{index}"
    s.log(f"round {index}: {plan}")
    fault_var = f"{plan['fault'][4:]}:{plan['fail_at']}" if plan["fault"].startswith("env_") else None
    t = Tracked(trainer_args(run_dir, plan), plugin_env(tmp, fault_var), s)
    try:
        break_trainer(t, run_dir, plan)
        t.wait()
    finally:
        if t.proc.poll() is None:
            os.killpg(t.proc.pid, signal.SIGKILL)
            t.proc.communicate(timeout=30)
    check_trainer_exit(t, run_dir, plan)
    assert_nothing_left(t, run_dir)
    if plan["fault"] == "poison_checkpoint":
        poison(run_dir, s)
    extra = ["--set", f"vec.step_timeout={STEP_TIMEOUT}"]
    if run_dir.exists():
        assert_resumable(run_dir, tmp, s, extra)


def can_mount() -> bool:
    """Whether this machine lets a test mount a private tmpfs (``unshare -m``: root or CAP_SYS_ADMIN)."""
    if shutil.which("unshare") is None:
        return False
    probe = ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def disk_full_round(s: Schedule, tmp: Path, index: int) -> None:
    """A trainer whose run dir lives on a tmpfs of a random small size, in a private mount namespace:
    it must stop with one line naming ENOSPC (or finish its budget) and leave no temp file; a copy of
    what it wrote, on a real disk, resumes from a finite checkpoint or is refused in one line."""
    plan = {
        "fault": "disk_full",
        "backend": s.rng.choice(["serial", "multiprocessing"]),
        "size_kb": s.rng.randint(48, 400),
        "interval": s.rng.choice([1, 2, 3]),
    }
    s.log(f"round {index}: {plan}")
    mnt, copy = tmp / f"round{index}-tmpfs", tmp / f"round{index}"
    mnt.mkdir()
    args = trainer_args(mnt / "run", plan)
    args[args.index("10000000")] = "200000"  # ends by itself if the disk never fills
    script = (
        f"mount -t tmpfs -o size={plan['size_kb']}k tmpfs {mnt} || exit 99; "
        f"{shlex.join([sys.executable, '-m', 'pufferbox', *args])}; rc=$?; "
        f"if [ -d {mnt}/run ]; then cp -a {mnt}/run {copy}; fi; exit $rc"
    )
    t = Tracked(args, plugin_env(tmp), s, command=["unshare", "-m", "sh", "-c", script])
    rc = t.wait()
    s.check(rc != 99, f"could not mount the tmpfs\n{t.tail()}")
    s.check("Traceback" not in t.out + t.err, f"traceback from the trainer\n{t.tail()}")
    if rc != 0:
        assert_one_line_error(t, "ENOSPC")
    assert_nothing_left(t, copy)
    if copy.exists():
        assert_resumable(copy, tmp, s, ["--set", f"vec.step_timeout={STEP_TIMEOUT}"])


def ray_workers(t: Tracked) -> list[psutil.Process]:
    """The trainer's live Ray rollout actors (``ray::RolloutWorker...`` processes of its tree)."""
    out = []
    for p in list(t.seen.values()):
        try:
            if p.is_running() and "RolloutWorker" in " ".join(p.cmdline()):
                out.append(p)
        except psutil.Error:
            pass
    return out


def ray_round(s: Schedule, tmp: Path, index: int) -> None:
    """``train --backend ray`` (a private local Ray): SIGKILL a rollout actor at a random moment (the
    run goes on with a replacement and finishes its budget, or stops in one line), or SIGTERM the
    trainer (143 with a checkpoint). Then: no process of the tree and no Ray session dir is left."""
    plan = {
        "fault": s.rng.choice(["kill_actor", "kill_actor", "sigterm_trainer"]),
        "backend": "ray",
        "lines": s.rng.randint(1, 3),
        "delay": s.rng.uniform(0, 0.5),
        "interval": s.rng.choice([1, 2, 3]),
    }
    s.log(f"round {index}: {plan}")
    run_dir = tmp / f"round{index}"
    args = trainer_args(run_dir, plan)
    args[args.index("10000000")] = "40000"
    args += ["--num-workers", "2"]
    ray_root = Path(tempfile.mkdtemp(prefix="pbc", dir="/tmp"))  # short: Ray's socket paths are limited to 107 bytes
    env = {**plugin_env(tmp), "PUFFERBOX_RAY_TMPDIR": str(ray_root)}
    env.pop("RAY_ADDRESS", None)
    t = Tracked(args, env, s)
    try:
        if t.wait_for_lines(run_dir, plan["lines"]):
            time.sleep(plan["delay"])
            if plan["fault"] == "sigterm_trainer":
                t.signal(signal.SIGTERM)
            else:
                workers = ray_workers(t)
                s.check(bool(workers), f"no RolloutWorker process under pid {t.proc.pid}")
                t.signal(signal.SIGKILL, s.rng.choice(workers).pid)
        rc = t.wait(timeout=2 * WAIT)
        s.check("Traceback" not in t.out + t.err, f"traceback from the trainer\n{t.tail()}")
        if plan["fault"] == "sigterm_trainer":
            s.check(rc in (0, 143), f"SIGTERM: exit {rc}, expected 143 (or 0 if it had finished)\n{t.tail()}")
            s.check(bool(checkpoints(run_dir)), f"no checkpoint after SIGTERM\n{t.tail()}")
        elif rc != 0:
            assert_one_line_error(t)
        else:
            lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
            s.check(lines[-1]["global_step"] >= 40000, f"finished short of its budget: {lines[-1]['global_step']}")
            s.log(f"actors replaced: {sum(x.get('actors_replaced', 0) for x in lines)}")
        assert_nothing_left(t, run_dir)
        left = [str(p) for p in ray_root.iterdir()]
        s.check(not left, f"Ray session dirs left: {left}")
    finally:
        if t.proc.poll() is None:
            os.killpg(t.proc.pid, signal.SIGKILL)
            t.proc.communicate(timeout=30)
        shutil.rmtree(ray_root, ignore_errors=True)
    assert_resumable(run_dir, tmp, s, [])


def stopped_trainer_round(s: Schedule, tmp: Path, index: int) -> None:
    """The trainer itself SIGSTOPped for up to twice ``step_timeout`` (a debugger, a suspended laptop, a
    cluster's preemption pause), then SIGCONTed: it must train on (its workers answered; the time it was
    stopped is not theirs), then SIGTERM: 143 with a checkpoint, nothing left, resumable."""
    plan = {
        "fault": "sigstop_sigcont_trainer",
        "backend": s.rng.choice(["multiprocessing", "multiprocessing", "serial"]),
        "lines": s.rng.randint(1, 4),
        "delay": s.rng.uniform(0, 0.4),
        "stop_s": s.rng.uniform(0.5, 2 * STEP_TIMEOUT),
        "interval": s.rng.choice([1, 2, 3]),
    }
    s.log(f"round {index}: {plan}")
    run_dir = tmp / f"round{index}"
    t = Tracked(trainer_args(run_dir, plan), plugin_env(tmp), s)
    try:
        s.check(t.wait_for_lines(run_dir, plan["lines"]), f"trainer ended before the fault\n{t.tail()}")
        time.sleep(plan["delay"])
        t.signal(signal.SIGSTOP)
        time.sleep(plan["stop_s"])
        before = len((run_dir / "metrics.jsonl").read_text().splitlines())
        t.signal(signal.SIGCONT)
        if not t.wait_for_lines(run_dir, before + 3):
            t.wait()
            s.check(False, f"the trainer did not train on after SIGCONT: exit {t.proc.returncode}\n{t.tail()}")
        t.signal(signal.SIGTERM)
        rc = t.wait()
    finally:
        if t.proc.poll() is None:
            os.killpg(t.proc.pid, signal.SIGKILL)
            t.proc.communicate(timeout=30)
    s.check("Traceback" not in t.out + t.err, f"traceback from the trainer\n{t.tail()}")
    s.check(rc == 143 and bool(checkpoints(run_dir)), f"SIGTERM after SIGCONT: exit {rc}\n{t.tail()}")
    assert_nothing_left(t, run_dir)
    assert_resumable(run_dir, tmp, s, ["--set", f"vec.step_timeout={STEP_TIMEOUT}"])


def sweep_study(run_dir: Path) -> object:
    import optuna

    meta = tomllib.loads((run_dir / "sweep.toml").read_text())
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.load_study(study_name=meta["study_name"], storage=meta["storage"])


def sweep_round(s: Schedule, tmp: Path, index: int) -> None:
    """A sweep killed (SIGKILL, or SIGTERM) while a random trial trains, then run again to its end: every
    trial it asked for is finished exactly once (an interrupted trial's settings run once more, in a
    new trial), its trial processes die with it, and nothing is left."""
    plan = {
        "fault": s.rng.choice(["sigkill_sweep", "sigterm_sweep"]),
        "parallel": s.rng.choice([1, 2]),
        "trial": s.rng.randint(0, 2),
        "lines": s.rng.randint(1, 3),
        "delay": s.rng.uniform(0, 0.3),
    }
    s.log(f"round {index}: {plan}")
    run_dir, trials = tmp / f"round{index}", 3
    args = ["sweep", "cartpole", "--trials", str(trials), "--run-dir", str(run_dir), "--pruner", "none"]
    args += ["--parallel", str(plan["parallel"]), "--seed", str(index)]
    for setting in ("train.total_steps=6144", "vec.num_envs=4", "train.num_steps=32", "train.checkpoint_interval=0"):
        args += ["--set", setting]
    args += ["--set", "train.stop_on_solve=false", "--set", "policy.hidden_size=16"]
    t = Tracked(args, plugin_env(tmp), s)
    try:
        if t.wait_for_lines(run_dir / "trials" / str(plan["trial"]), plan["lines"], timeout=2 * WAIT):
            time.sleep(plan["delay"])
            t.signal(signal.SIGKILL if plan["fault"] == "sigkill_sweep" else signal.SIGTERM)
        t.wait(timeout=2 * WAIT)
    finally:
        if t.proc.poll() is None:
            os.killpg(t.proc.pid, signal.SIGKILL)
            t.proc.communicate(timeout=30)
    s.check("Traceback" not in t.out + t.err, f"traceback from the sweep\n{t.tail()}")
    assert_nothing_left(t, None)
    first = [(tr.number, cut_short(tr), dict(tr.params)) for tr in sweep_study(run_dir).trials]
    s.log(f"after the fault: {[(n, state) for n, state, _ in first]}")
    again = Tracked(args, plugin_env(tmp), s)
    again.wait(timeout=4 * WAIT)
    s.check(again.proc.returncode == 0, f"the sweep did not continue: exit {again.proc.returncode}\n{again.tail()}")
    assert_nothing_left(again, None)
    check_sweep_trials(s, run_dir, first, trials)


def cut_short(trial: object) -> str:
    """A trial's state, ``RUNNING`` also for one the sweep interrupted itself (SIGTERM: a FAIL without an
    ``error``; with one it is a real failure)."""
    state = trial.state.name
    return "RUNNING" if state == "FAIL" and "error" not in trial.user_attrs else state


def check_sweep_trials(s: Schedule, run_dir: Path, first: list, trials: int) -> None:
    """``trials`` finished trials; each one the fault cut short ran again exactly once; trial dirs are their own."""
    done = [tr for tr in sweep_study(run_dir).trials if tr.state.name in ("COMPLETE", "PRUNED")]
    s.log(f"finished: {[(tr.number, tr.state.name) for tr in done]}")
    failed = [tr for tr in sweep_study(run_dir).trials if tr.state.name == "FAIL" and "error" in tr.user_attrs]
    s.check(not failed, f"trials failed: {[(tr.number, tr.user_attrs['error']) for tr in failed]}")
    s.check(len(done) == trials, f"{len(done)} trials finished, expected {trials}")
    cut = [params for _, state, params in first if state == "RUNNING"]
    for params in cut:
        again = [tr.number for tr in done if tr.params == params]
        s.check(len(again) == 1, f"an interrupted trial's settings ran {len(again)} times after the resume: {params}")
    keys = [json.dumps(tr.params, sort_keys=True) for tr in done]
    s.check(len(set(keys)) == len(keys), f"two finished trials share their settings: {keys}")
    for tr in done:
        s.check((run_dir / "trials" / str(tr.number) / "metrics.jsonl").is_file(), f"trial {tr.number} wrote no metrics")
