"""Short GIFs of trained Ocean agents for the README: `pufferbox eval --video`, then the first frames kept.

    .venv/bin/python benchmarks/ocean_gifs.py pong=RUN_DIR breakout=RUN_DIR ... [--frames 150 --stride 2]

Each RUN_DIR is a `pufferbox train ocean/NAME` run; the GIF lands in benchmarks/ocean/NAME.gif
(the policy samples its actions, as in training; seed 12345, or --seed).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import imageio.v2 as imageio

OUT = Path(__file__).parent / "ocean"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="NAME=RUN_DIR")
    parser.add_argument("--frames", type=int, default=150, help="frames kept from the first episode's start")
    parser.add_argument("--stride", type=int, default=2, help="keep every STRIDE-th frame")
    parser.add_argument("--fps", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=12345, help="eval's seed (another one where a first game is too short)")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    pufferbox = Path(sys.executable).parent / "pufferbox"
    for item in args.runs:
        name, _, run = item.partition("=")
        with tempfile.TemporaryDirectory() as tmp:
            full = Path(tmp) / "full.gif"
            cmd = [str(pufferbox), "eval", f"ocean/{name}", "--checkpoint", run, "--episodes", "1", "--video", str(full)]
            cmd += ["--seed", str(args.seed)]
            subprocess.run(cmd, check=True, capture_output=True)
            frames = imageio.mimread(full, memtest=False)[: args.frames : args.stride]
        scale = max(1, 180 // min(frames[0].shape[:2]))  # small boards (Connect Four: 42x36) scaled up
        frames = [frame.repeat(scale, axis=0).repeat(scale, axis=1) for frame in frames]
        imageio.mimsave(OUT / f"{name}.gif", frames, duration=1000 / args.fps, loop=0)
        print(f"{OUT / f'{name}.gif'}: {len(frames)} frames, {(OUT / f'{name}.gif').stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
