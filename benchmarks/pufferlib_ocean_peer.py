"""PufferLib 3.0's own trainer on one of its Ocean games, as shipped (its config file), as a benchmark peer.

Runs in PufferLib's venv (``bench_train_peers.py --setup --envs nethack`` builds it) and imports nothing
from pufferbox:

    $PUFFERBOX_PEERS_DIR/pufferlib/bin/python benchmarks/pufferlib_ocean_peer.py LOG.jsonl SECONDS \\
        puffer_pong --train.device cpu --vec.num-envs 2 --vec.num-workers 2

It calls PufferLib's ``pufferl.train(env_name, logger=...)`` with the arguments after SECONDS (its own
CLI parser reads them) and a logger that appends one JSON line per log call to LOG.jsonl: ``t``
(seconds since this script started, so the launch is included), ``step`` (agent steps) and the
``environment/*`` stats PufferLib reports (for Pong ``score`` = points won - points lost). It stops
the run after SECONDS.
"""

from __future__ import annotations

import json
import os
import sys
import time

START = time.perf_counter()

from pufferlib import pufferl  # noqa: E402  (the launch is timed from before the import)


class JsonLogger:
    def __init__(self, path: str, seconds: float):
        self.file = open(path, "a", buffering=1)  # noqa: SIM115  (closed by close() or at exit)
        self.deadline = START + seconds
        self.run_id = str(int(time.time()))

    def log(self, logs: dict, step: int) -> None:
        row = {"t": time.perf_counter() - START, "step": int(step), "sps": float(logs.get("SPS", 0.0))}
        row.update({k.split("/", 1)[1]: float(v) for k, v in logs.items() if k.startswith("environment/")})
        self.file.write(json.dumps(row) + "\n")
        if time.perf_counter() > self.deadline:  # PufferLib catches SystemExit in places: leave at once
            self.file.close()
            os._exit(0)

    def close(self, model_path: str) -> None:
        self.file.close()


def main() -> None:
    path, seconds, env_name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    sys.argv = [sys.argv[0], *sys.argv[4:]]
    pufferl.train(env_name, logger=JsonLogger(path, seconds))


if __name__ == "__main__":
    main()
