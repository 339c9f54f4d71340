"""Ocean games: steps/s per core against PufferLib 3.0's builds of the same games, the kernels on a GPU,
and time to solve with `pufferbox train` defaults.

    .venv/bin/python benchmarks/bench_train_peers.py --setup --envs nethack   # PufferLib 3.0's venv, once
    .venv/bin/python benchmarks/bench_ocean.py --part cpu [--num-envs 256] [--repeats 3]
    .venv/bin/python benchmarks/bench_ocean.py --part solve --games pong --seeds 1 2 3 [--peer]
    .venv/bin/python benchmarks/bench_ocean.py --part race --games pong breakout --seeds 1 --peer-seconds 600
    python3 benchmarks/bench_ocean.py --part cuda                            # on a GPU machine

``cpu``: one process each, ``--num-envs`` envs in one object, uniformly random actions drawn before
timing; agent steps/s of pufferbox's C block (GameBlock) and of PufferLib's class in its own venv
(a subprocess, run right after ours, alternating ``--repeats`` times so both see the same load; the
best of the repeats). Both at their own defaults (the games differ in rules and frame skip), plus rows
with the frame skip matched where a game has one. ``solve``: `pufferbox train ocean/NAME` with the
plugin defaults, wall time from launch to the step the recent mean return first reaches
`solved_return` (the trainer's own solve detection), per seed; ``--peer`` also runs PufferLib 3.0's own
trainer with its shipped config for that game right after each seed and reports its time from launch
to its logged score first reaching the same return (Pong: points won - points lost). ``race``: the
other way round, for games our defaults master and PufferLib's trainer does not reach on a CPU in its
budget: its trainer runs ``--peer-seconds``, then `pufferbox train` with the defaults until its recent
return first reaches the best score PufferLib's logged; both times from launch, and their ratio.
``cuda``: env steps/s of each game's kernel (KernelEnv, random actions written on the device).

``--write`` writes each part's table to benchmarks/results/ (``ocean_speed.json``, or ``ocean_speed_GAME...``
for ``--games``; ``ocean_solve_GAME.json``; ``ocean_race_GAME.json``; ``gpu_ocean_kernels.json``) and
re-renders it in RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import peer_venvs
from results import load, machine, publish

# pufferbox game, its kwargs -> PufferLib 3.0 class, its kwargs (None: no such game in PufferLib)
PEERS = {
    "pong": ({}, "pufferlib.ocean.pong.pong:Pong", {}),
    "pong (frameskip 1 both)": ({"frameskip": 1}, "pufferlib.ocean.pong.pong:Pong", {"frameskip": 1}),
    "pong (frameskip 4 both)": ({"frameskip": 4}, "pufferlib.ocean.pong.pong:Pong", {"frameskip": 4}),
    "pong (as trained: 4 vs PufferLib's 8)": ({}, "pufferlib.ocean.pong.pong:Pong", {"frameskip": 8}),
    "pong (frameskip 8 both: PufferLib's training config)": (
        {"frameskip": 8},
        "pufferlib.ocean.pong.pong:Pong",
        {"frameskip": 8},
    ),
    "pong (PufferLib's rules, frameskip 1 both)": (
        {"rules": "pufferlib", "frameskip": 1},
        "pufferlib.ocean.pong.pong:Pong",
        {"frameskip": 1},
    ),
    "pong (PufferLib's rules, frameskip 8 both: its training config)": (
        {"rules": "pufferlib", "frameskip": 8},
        "pufferlib.ocean.pong.pong:Pong",
        {"frameskip": 8},
    ),
    # PufferLib's Breakout observes no landing hint: ours writes 0 there (the same work as before it existed)
    "breakout": ({"landing_hint": False}, "pufferlib.ocean.breakout.breakout:Breakout", {}),
    "breakout (frameskip 4 both)": (
        {"frameskip": 4, "landing_hint": False},
        "pufferlib.ocean.breakout.breakout:Breakout",
        {"frameskip": 4},
    ),
    "breakout (ours with the landing hint, its default; PufferLib's observation has none)": (
        {},
        "pufferlib.ocean.breakout.breakout:Breakout",
        {},
    ),
    # PufferLib's Tetris observes no placements: ours writes 0 there
    "tetris": ({"placements": False}, "pufferlib.ocean.tetris.tetris:Tetris", {}),
    "tetris (ours with the placements, its default; PufferLib's observation has none)": (
        {},
        "pufferlib.ocean.tetris.tetris:Tetris",
        {},
    ),
    "snake": ({}, "pufferlib.ocean.snake.snake:Snake", {}),
    # PufferLib's Snake at our rules: its grid counts a wall margin `vision` cells deep on each side, so its
    # 32x32 is our 24x24 (22x22 inside the wall); 8 snakes, 16 food, no corpses, length capped at 48
    "snake (matched: PufferLib's at ours, 8 snakes on 22x22 inside the wall, 16 food)": (
        {},
        "pufferlib.ocean.snake.snake:Snake",
        {
            "width": 32,
            "height": 32,
            "num_snakes": 8,
            "num_food": 16,
            "vision": 5,
            "leave_corpse_on_death": False,
            "max_snake_length": 48,
        },
    ),
    "trash": ({}, "pufferlib.ocean.trash_pickup.trash_pickup:TrashPickupEnv", {}),
    # PufferLib's defaults: 10x10, 3 agents, 15 items, 2 bins, 300 steps
    "trash (matched: 15 items, 300 steps)": (
        {"num_trash": 15, "max_steps": 300},
        "pufferlib.ocean.trash_pickup.trash_pickup:TrashPickupEnv",
        {},
    ),
    "connect4": ({}, "pufferlib.ocean.connect4.connect4:Connect4", {}),
    # PufferLib's Connect4 is one agent against a bot that searches 4 plies each step (an exhaustive sum of
    # outcomes), a full column losing at once: ours with a 4-ply bot (connect4_bot: minimax, alpha-beta)
    "connect4_bot (matched: PufferLib's Connect4, one agent against a 4-ply search)": (
        {},
        "pufferlib.ocean.connect4.connect4:Connect4",
        {},
    ),
    "tripletriad": ({}, "pufferlib.ocean.tripletriad.tripletriad:TripleTriad", {}),
    "enduro": ({}, "pufferlib.ocean.enduro.enduro:Enduro", {}),
    "enduro_full": ({}, None, {}),
    # PufferLib's Enduro at its defaults: one frame a step, 9 actions, 3 lanes, at most 10 rivals, days of
    # 232 s at 60 frames/s with quotas of 200 then 300 cars: ours is the full race at one frame a step
    "enduro_full (matched: PufferLib's Enduro, frame level, 9 actions, 200/300-car days)": (
        {"frameskip": 1},
        "pufferlib.ocean.enduro.enduro:Enduro",
        {},
    ),
    "arena": ({}, None, {}),
    "go": ({}, "pufferlib.ocean.go.go:Go", {}),  # both 7x7 by default
    "go (9x9 both)": ({"size": 9}, "pufferlib.ocean.go.go:Go", {"grid_size": 9}),
    # PufferLib's Go is one agent against a bot inside each step, refusing illegal moves, 3 x size^2 steps
    # a game, komi 7.5: ours with a bot of the same kind (go_bot); random actions over its 50 (82 on 9x9)
    "go_bot (matched: PufferLib's Go, one agent against a bot, 7x7)": ({}, "pufferlib.ocean.go.go:Go", {}),
    "go_bot (matched, 9x9 both)": ({"size": 9, "max_moves": 243}, "pufferlib.ocean.go.go:Go", {"grid_size": 9}),
    "g2048": ({}, None, {}),
    "freeway": ({}, None, {}),
    "sokoban": ({}, None, {}),
    "tetris_place": ({}, None, {}),
    "rware": ({}, "pufferlib.ocean.rware.rware:Rware", {}),
    # PufferLib's class defaults: map 1 (10x11, 32 shelves), 4 robots, 4 requested, no episode end
    "rware (matched: map 1, 4 robots, 4 requested)": (
        {"layout": 1, "requested": 4, "max_steps": 500, "shaping": 1},
        "pufferlib.ocean.rware.rware:Rware",
        {"map_choice": 1, "num_agents": 4, "num_requested_shelves": 4},
    ),
    # each PufferLib step is its agent's move and its scripted random opponent's reply; ours is one ply
    "checkers": ({}, "pufferlib.ocean.checkers.checkers:Checkers", {}),
    "survival": ({}, None, {}),
    "pacman": ({}, "pufferlib.ocean.pacman.pacman:Pacman", {}),
    "pacman (classic, PufferLib's rules)": (
        {
            "maze": "classic",
            "lives": 1,
            "frightened_steps": 35,
            "scatter_steps": 70,
            "chase_steps": 140,
            "ghost_speed": 100,
            "max_steps": 10000,
        },
        "pufferlib.ocean.pacman.pacman:Pacman",
        {},
    ),
    "asteroids": ({}, None, {}),
    "slimevolley": ({}, None, {}),
    "boids": ({}, None, {}),
    # PufferLib's shipped config: 64 boids, avoid 1, matching 1 (its visual range 20 lies inside its
    # protected range 100, so only crowding counts), no margin reward; its actions are MultiDiscrete([5, 5])
    "boids (matched: PufferLib's ranges and factors)": (
        {"walls": 1, "protected_range": 100, "visual_range": 20, "centering_factor": 0.0, "margin_factor": 0.0},
        "pufferlib.ocean.boids.boids:Boids",
        {"num_boids": 64, "margin_turn_factor": 0.0, "centering_factor": 0.0, "avoid_factor": 1.0, "matching_factor": 1.0},
    ),
    # the same work as PufferLib's Boids: every boid sees all 64, MultiDiscrete([5, 5]) steering, its config
    "boids_all (PufferLib's Boids rules: all 64 seen, 5x5 steering)": (
        {},
        "pufferlib.ocean.boids.boids:Boids",
        {"num_boids": 64, "margin_turn_factor": 0.0, "centering_factor": 0.0, "avoid_factor": 1.0, "matching_factor": 1.0},
    ),
}

# games whose random actions are drawn from the first n of ours, the size of the peer's action space:
# PufferLib's Go has a point per cell and a pass; ours also numbers off-board points up to 9x9
ACTIONS_DRAWN = {"go_bot": lambda kwargs: kwargs.get("size", 7) ** 2 + 1}

PEER_SNIPPET = r"""
import importlib, json, sys, time
import numpy as np
path, kwargs, num_envs, seconds = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
module, name = path.split(":")
env = getattr(importlib.import_module(module), name)(num_envs=num_envs, **kwargs)
env.reset(seed=0)
space = env.single_action_space
high = np.atleast_1d(getattr(space, "nvec", getattr(space, "n", 1)))
actions = np.random.default_rng(0).integers(0, high, size=(64, env.num_agents, *space.shape)).astype(env.actions.dtype)
actions = actions.reshape(64, *env.actions.shape)
steps, start = 0, time.perf_counter()
while time.perf_counter() - start < seconds:
    env.step(actions[steps % 64])
    steps += 1
print(json.dumps({"agent_steps_per_s": steps * env.num_agents / (time.perf_counter() - start), "agents": env.num_agents}))
"""


def ours(game: str, kwargs: dict, num_envs: int, seconds: float, drawn: int | None = None) -> dict:
    import importlib

    from pufferbox_ocean.block import GameBlock

    reference = importlib.import_module(f"pufferbox_ocean.games.{game}").GAME.reference
    block = GameBlock(game, reference, num_envs, **kwargs)
    block.vec_reset(seed=0)
    rng = np.random.default_rng(0)
    if getattr(block, "continuous", False):  # Box(-1, 1): float actions, quantized by the block
        actions = rng.uniform(-1, 1, (64, block.num_agents, len(block.act_n))).astype(np.float32)
    else:
        high = [min(k, drawn or k) for k in block.act_n]
        actions = np.stack([rng.integers(0, k, (64, block.num_agents)) for k in high], axis=-1).astype(np.int64)
        actions = actions.reshape(64, block.num_agents, *block.act_spec.shape)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        block.vec_step(actions[steps % 64])
        steps += 1
    rate = steps * block.num_agents / (time.perf_counter() - start)
    block.close()
    return {"agent_steps_per_s": rate, "agents": block.num_agents}


def peer(path: str, kwargs: dict, num_envs: int, seconds: float) -> dict | None:
    python = peer_venvs.python_of(peer_venvs.PUFFERLIB_VENV)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [str(python), "-c", PEER_SNIPPET, path, json.dumps(kwargs), str(num_envs), str(seconds)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    if out.returncode != 0:
        print(f"peer {path} failed: {out.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def part_cpu(args: argparse.Namespace) -> None:
    rows = []
    for label, (kwargs, peer_path, peer_kwargs) in PEERS.items():
        game = label.split(" ")[0]
        if args.games and game not in args.games:
            continue
        mine, theirs = [], []
        drawn = ACTIONS_DRAWN[game](kwargs) if game in ACTIONS_DRAWN else None
        for _ in range(args.repeats):
            mine.append(ours(game, kwargs, args.num_envs, args.seconds, drawn)["agent_steps_per_s"])
            if peer_path is not None:
                result = peer(peer_path, peer_kwargs, args.num_envs, args.seconds)
                if result is not None:
                    theirs.append(result["agent_steps_per_s"])
        rows.append((label, max(mine), max(theirs) if theirs else None, os.getloadavg()[0]))
        print(
            json.dumps({"game": label, "pufferbox": rows[-1][1], "pufferlib": rows[-1][2], "load": rows[-1][3]}), flush=True
        )
    table = []
    for label, mine, theirs, row_load in rows:
        ratio = f"{mine / theirs:.2f}x" if theirs else "-"
        theirs_text = f"{theirs / 1e6:.2f}M" if theirs else "no such game"
        table.append([label, f"{mine / 1e6:.2f}M", theirs_text, ratio, f"{row_load:.1f}"])
    name = args.table or "ocean_speed" + "".join(f"_{g}" for g in args.games)
    meta = {
        "command": command_line(),
        "machine": f"{machine()}, one process each",
        "load": f"{load()} (at the end; per row in the table)",
        "peer": "PufferLib 3.0, its own venv",
    }
    columns = ["game", "pufferbox agent steps/s", "PufferLib 3.0", "ratio", "load"]
    publish(name, columns, table, meta, args.write)


def command_line() -> str:
    return " ".join([".venv/bin/python", "benchmarks/bench_ocean.py", *sys.argv[1:]])


def part_solve(args: argparse.Namespace) -> None:
    for game in args.games or ["pong"]:
        table = []
        for seed in args.seeds:
            table.append(solve_ours(game, seed, args.extra))
            print(" | ".join(table[-1]), flush=True)
            if args.peer and game in PEER_TRAINERS:
                table.append(solve_peer(game, seed, args.peer_seconds))
                print(" | ".join(table[-1]), flush=True)
        meta = {
            "command": command_line(),
            "machine": machine(),
            "load": f"{load()} (at the end)",
            "peer": f"PufferLib 3.0 {PEER_TRAINERS[game][0]}, its shipped config"
            if args.peer and game in PEER_TRAINERS
            else "",
        }
        columns = ["trainer", "seed", "launch to the level", "steps then"]
        publish(f"ocean_solve_{game}", columns, table, meta, args.write, align="lrrr")


def solve_ours(game: str, seed: int, extra: list[str]) -> list[str]:
    """`pufferbox train ocean/GAME` from launch to its solve: the row of the table."""
    pufferbox = Path(sys.executable).parent / "pufferbox"
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        out = subprocess.run(
            [str(pufferbox), "train", f"ocean/{game}", "--seed", str(seed), "--run-dir", f"{tmp}/run",
             "--no-tensorboard", *extra],
            capture_output=True, text=True,
        )  # fmt: skip
        wall = time.perf_counter() - start
    done = [line for line in out.stdout.splitlines() + out.stderr.splitlines() if line.startswith("done:")]
    summary = done[-1] if done else (out.stderr.strip().splitlines() or ["no output"])[-1]
    solved = bool(done) and "solved (recent mean" in done[-1]
    steps = done[-1].split(" steps in ")[0].split()[-1] if done else "?"
    label = f"`pufferbox train ocean/{game}` (defaults{', ' + ' '.join(extra) if extra else ''})"
    return [label, str(seed), f"{wall:.1f} s" if solved else f"not solved: {summary}", steps]


def solve_peer(game: str, seed: int, seconds: float) -> list[str]:
    """PufferLib 3.0's trainer with its shipped config, to the same level: the row of the table."""
    from pufferbox.api import get_registry

    threshold = get_registry().get(f"ocean/{game}").training.solved_return
    t, peer_steps, best = peer_time_to(game, seed, threshold, seconds)
    label = f"PufferLib 3.0 `{PEER_TRAINERS[game][0]}`, its shipped config on CPU"
    if t is not None:
        return [label, str(seed), f"{t:.1f} s", f"{peer_steps:,}"]
    return [label, str(seed), f"not within {seconds:.0f} s (best {best})", f"{peer_steps or 0:,} at {seconds:.0f} s"]


# pufferbox game -> PufferLib 3.0's env name for its trainer (its shipped config file), the field of its logs
# that measures the same thing as our return, and the factor from our return to that field. Pong: points won -
# points lost, the same in both. Breakout: both play Atari's two walls (864 points), compared as a fraction of
# that maximum (PufferLib's ``perf`` = score / 864).
PEER_TRAINERS = {"pong": ("puffer_pong", "score", 1.0), "breakout": ("puffer_breakout", "perf", 1 / 864)}
# The race plays our game at the peer's rules where we have them: `pufferbox train` arguments, and the field of
# our metrics.jsonl that is the peer's score (Pong at PufferLib's rules pays 0.1 a return, as PufferLib's
# does, so its margin, points won - points lost, is the score there, not the return). Breakout plays without
# the landing hint, which PufferLib's observation lacks.
RACE_SETTINGS = {
    "pong": (["--set", "env.rules=pufferlib", "--set", "env.frameskip=8"], "episode_margin"),
    "breakout": (["--set", "env.landing_hint=false"], "return_recent"),
}


def peer_time_to(game: str, seed: int, threshold: float, seconds: float) -> tuple[float | None, int | None, float | None]:
    """PufferLib's trainer on its own game and config: seconds from launch to its logged score first >= threshold."""
    env_name, field, scale = PEER_TRAINERS[game]
    rows = peer_log(game, seed, seconds)
    best = max((r.get(field, float("-inf")) for r in rows), default=None)
    for row in rows:
        if row.get(field, float("-inf")) >= threshold * scale:
            return row["t"], row["step"], best
    return None, (rows[-1]["step"] if rows else None), best


def peer_log(game: str, seed: int, seconds: float) -> list[dict]:
    """PufferLib's trainer on its own game and config for ``seconds``: its logged rows (``t`` from launch)."""
    env_name = PEER_TRAINERS[game][0]
    python = peer_venvs.python_of(peer_venvs.PUFFERLIB_VENV)
    script = Path(__file__).parent / "pufferlib_ocean_peer.py"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.jsonl"
        cmd = [str(python), str(script), str(log), str(seconds), env_name, "--train.device", "cpu",
               "--vec.num-envs", "2", "--vec.num-workers", "2", "--train.seed", str(seed)]  # fmt: skip
        # its own session, output to a file: its worker processes outlive the trainer's exit, and must not hold
        # our pipes open; the whole group is ended once the trainer returns
        with open(Path(tmp) / "out.txt", "w") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=tmp, start_new_session=True)
            try:
                proc.wait(timeout=seconds + 300)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
        return [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []


def part_race(args: argparse.Namespace) -> None:
    """PufferLib's trainer for ``--peer-seconds``, then ours to the best score it logged: both times from launch."""
    for game in args.games or ["pong"]:
        table = []
        for seed in args.seeds:
            peer_rows = peer_log(game, seed, args.peer_seconds)
            env_name, field, scale = PEER_TRAINERS[game]
            scored = [r for r in peer_rows if field in r]
            if not scored:
                print(f"{game} seed {seed}: PufferLib's trainer logged no {field}", file=sys.stderr)
                continue
            best = max(r[field] for r in scored)
            peer_t = next(r["t"] for r in scored if r[field] >= best)
            level = best / scale
            extra, field = RACE_SETTINGS[game]
            ours_t, ours_step = time_to_return(game, seed, level, max(60.0, peer_t), extra, field)
            ratio = f"{peer_t / ours_t:.1f}x" if ours_t else "-"
            mine = f"{ours_t:.1f} s ({ours_step:,} steps)" if ours_t else f"not within {max(60.0, peer_t):.0f} s"
            table.append([str(seed), f"{level:g}", f"{peer_t:.1f} s", mine, ratio])
            print(" | ".join(table[-1]), flush=True)
        meta = {
            "command": command_line(),
            "machine": machine(),
            "load": f"{load()} (at the end)",
            "peer": f"PufferLib 3.0 {PEER_TRAINERS[game][0]}, its shipped config, {args.peer_seconds:.0f} s per seed",
        }
        extra, field = RACE_SETTINGS[game]
        ours = f"`pufferbox train ocean/{game} {' '.join(extra)}`".replace(" `", "`")
        note = f"pufferbox: {ours} with the game's defaults, from launch until its `{field}` first reaches PufferLib's best."
        columns = ["seed", "PufferLib's best score", "PufferLib: launch to it", "pufferbox defaults: launch to it", "ratio"]
        publish(f"ocean_race_{game}", columns, table, meta, args.write, align="rrrrr", notes=[note])


def time_to_return(
    game: str, seed: int, level: float, timeout: float, extra: list[str], field: str
) -> tuple[float | None, int]:
    """`pufferbox train ocean/GAME` with its defaults and ``extra``, watched: seconds from launch until the
    logged ``field`` (``return_recent``: the recent return) first reaches ``level`` (then the run is stopped),
    and the steps then."""
    pufferbox = Path(sys.executable).parent / "pufferbox"
    with tempfile.TemporaryDirectory() as tmp:
        metrics = Path(tmp) / "run" / "metrics.jsonl"
        start = time.perf_counter()
        cmd = [
            str(pufferbox),
            "train",
            f"ocean/{game}",
            "--seed",
            str(seed),
            "--run-dir",
            f"{tmp}/run",
            "--no-tensorboard",
            "--set",
            "train.stop_on_solve=false",
            *extra,
        ]  # fmt: skip  (the level may lie past the solved return)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while time.perf_counter() - start < timeout and proc.poll() is None:
                time.sleep(0.1)
                lines = metrics.read_text().splitlines() if metrics.exists() else []
                rows = [json.loads(line) for line in lines if line.endswith("}")]  # the last may be half-written
                hit = next((r for r in rows if (r.get(field) or float("-inf")) >= level), None)
                if hit is not None:
                    return time.perf_counter() - start, int(hit["global_step"])
            return None, 0
        finally:
            proc.kill()
            proc.wait()


def part_cuda(args: argparse.Namespace) -> None:
    import torch
    from pufferbox_ocean.plugin import games

    from pufferbox.api import get_registry
    from pufferbox.cuda.runtime import KernelEnv

    table = []
    for game in games():
        if not game.cuda_type or (args.games and game.name not in args.games):
            continue
        impl = get_registry().get(f"ocean/{game.name}").build.cuda
        env = KernelEnv(impl, num_envs=args.cuda_envs, seed=0)
        actions = env.tensor("actions")
        for _ in range(20):
            actions.random_(0, env.num_actions)
            env.step()
        torch.cuda.synchronize()
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            actions.random_(0, env.num_actions)
            env.step()
            steps += 1
        torch.cuda.synchronize()
        rate = steps * args.cuda_envs / (time.perf_counter() - start)
        table.append([game.name, f"{args.cuda_envs:,}", f"{rate:,.0f}", f"{rate * env.num_agents:,.0f}"])
        print(" | ".join(table[-1]), flush=True)
    meta = {"command": command_line(), "machine": f"{torch.cuda.get_device_name(0)}, {machine()}", "load": load()}
    publish("gpu_ocean_kernels", ["game", "envs", "env steps/s", "agent steps/s"], table, meta, args.write)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("cpu", "solve", "race", "cuda"), default="cpu")
    parser.add_argument("--games", nargs="*", default=[])
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--cuda-envs", type=int, default=65536)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--peer", action="store_true", help="with --part solve: PufferLib's trainer to the same return")
    parser.add_argument("--peer-seconds", type=float, default=600.0, help="its time budget per seed")
    parser.add_argument("--write", action="store_true", help="write the table's JSON and re-render RESULTS.md")
    parser.add_argument("--table", default="", help="with --part cpu: the table's name (default ocean_speed[_GAME...])")
    parser.add_argument("extra", nargs="*", help="with --part solve: extra `pufferbox train` arguments after --")
    args = parser.parse_args()
    if args.num_envs < 1 or args.repeats < 1 or args.seconds <= 0:
        raise SystemExit("Error: --num-envs and --repeats must be >= 1 and --seconds > 0")
    {"cpu": part_cpu, "solve": part_solve, "race": part_race, "cuda": part_cuda}[args.part](args)


if __name__ == "__main__":
    main()
