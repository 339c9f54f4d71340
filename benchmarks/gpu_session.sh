#!/usr/bin/env bash
# The GPU checks in one batch, for any machine with a CUDA GPU (copied there with this tree).
#
#   bash benchmarks/gpu_session.sh OUT_DIR        # every log and table lands in OUT_DIR
#
# Expects the interpreter on PATH as python3 with a CUDA torch, nvcc, and wheels for what that
# machine lacks in ./.whl (benchmarks/gpu_wheels.sh builds them: pycuda for its Python, numpy 1.26.4,
# gymnasium, pettingzoo, nle, ale-py, ...): they install with --no-index, nothing is fetched. Steps
# run in order of what the issue needs most, each under its own time limit, so a slow step costs only
# itself.
# GPU_SESSION_INSTALL=0 skips the install (a rehearsal in an existing venv); GPU_STEPS sets the
# training budget of the train-* steps (default 65536); GPU_SESSION_ONLY="install bench-cuda" runs
# only the steps named. The solve step (issue 51: launch to solved with each game's GPU profile) takes
# GPU_SOLVE_ENVS, GPU_SOLVE_SEEDS, GPU_SOLVE_SECONDS (its limit, default 300) and GPU_SOLVE_ARGS (what
# every run adds, default the CUDA kernels: --set vec.backend=cuda; a CPU rehearsal passes a small
# budget instead, e.g. "--set train.total_steps=131072"); solve-throughput runs Pong's profile for
# GPU_PROFILE_STEPS agent steps (default 10 updates) with the same GPU_SOLVE_ARGS.
set -uo pipefail
OUT=${1:?usage: gpu_session.sh OUT_DIR}
LOGS=$(mktemp -d)  # whole logs, packed into OUT/logs.tar.gz after every step (OUT keeps few files)
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PUFFERBOX_CACHE=${PUFFERBOX_CACHE:-/tmp/pufferbox-cache}
export GPU_STEPS=${GPU_STEPS:-65536}
export GPU_SOLVE_ENVS=${GPU_SOLVE_ENVS:-ocean/pong ocean/breakout ocean/snake} GPU_SOLVE_SEEDS=${GPU_SOLVE_SEEDS:-1 2 3}
export GPU_SOLVE_ARGS=${GPU_SOLVE_ARGS---set vec.backend=cuda} GPU_PROFILE_STEPS=${GPU_PROFILE_STEPS:-1310720}
# console scripts land beside the interpreter; nvcc compiles the kernels
export PATH="$(python3 -c 'import os, sys; print(os.path.dirname(sys.executable))'):$PATH:/usr/local/cuda/bin"

step() {  # step NAME SECONDS COMMAND...: one headed section of summary.md, output in NAME.log
  local name=$1 limit=$2; shift 2
  [ -z "${GPU_SESSION_ONLY:-}" ] || [[ " $GPU_SESSION_ONLY " == *" $name "* ]] || return 0
  local start=$SECONDS
  echo "## $name" >>"$OUT/summary.md"
  # bash -c: steps may be functions; OUT/running.log holds the step in flight, should the call run out of time
  timeout "$limit" bash -c '"$@"' "$name" "$@" 2>&1 | tee "$LOGS/$name.log" >"$OUT/running.log"
  local rc=${PIPESTATUS[0]}
  rm -f "$OUT/running.log"
  echo "rc=$rc after $((SECONDS - start)) s: $*" >>"$OUT/summary.md"
  tail -n 40 "$LOGS/$name.log" >>"$OUT/summary.md"
  echo >>"$OUT/summary.md"
  tar czf "$OUT/logs.tar.gz" -C "$LOGS" .
}

install() {
  python3 -m pip install -q --no-index --no-deps --no-compile .whl/*.whl || return 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . || return 1
  for plugin in warp classic nethack atari ocean; do  # one at a time: a plugin that fails to build drops only itself
    python3 -m pip install -q --no-index --no-deps --no-build-isolation -e "plugins/$plugin" || echo "plugin $plugin: not installed"
  done
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nproc; python3 -c "import torch, numpy; print('torch', torch.__version__, 'numpy', numpy.__version__)"
  python3 -c "import pycuda.driver as d; d.init(); print('pycuda sees', d.Device(0).name())"
}

# phase split and steady steps/s (first update excluded) from a run's metrics.jsonl
summarize_run() {
  python3 - "$1" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1] + "/metrics.jsonl") if line.strip()]
first, last = rows[0], rows[-1]
sps = (last["global_step"] - first["global_step"]) / max(last["wall_time"] - first["wall_time"], 1e-9)
phases = {k: last[f"time_{k}"] - first[f"time_{k}"] for k in ("env", "inference", "wait", "learn") if f"time_{k}" in last}
print(f"{sys.argv[1]}: {last['global_step']} steps, steady {sps:,.0f} steps/s, after the first update: "
      + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
EOF
}

train_run() {  # NAME ENV STEPS [TRAIN ARGS...]: one run in runs/gpu-session-NAME, then its summary line
  local name=$1 env=$2 steps=$3 dir="runs/gpu-session-$1"
  shift 3
  rm -rf "$dir"
  pufferbox train "$env" --total-steps "$steps" --run-dir "$dir" --no-tensorboard "$@"
  summarize_run "$dir"
}

train_pair() {  # ENV [STEPS]: the same command with the device auto-selected, then on the CPU only
  local env=$1 steps=${2:-$GPU_STEPS}
  train_run "$env-auto" "$env" "$steps" --device auto
  train_run "$env-cpu" "$env" "$steps" --device cpu
}

train_variant() {  # NAME ENV [TRAIN ARGS...]: on the GPU, the plugin defaults, then the same with ARGS
  local name=$1 env=$2
  shift 2
  train_run "$env-defaults" "$env" "$GPU_STEPS" --device auto
  train_run "$env-$name" "$env" "$GPU_STEPS" --device auto "$@"
}

train_ocean_cuda() {  # each Ocean game with a kernel: `--backend cuda` at the plugin defaults, then a GPU-sized batch
  for game in ${GPU_OCEAN_GAMES:-pong snake breakout}; do
    timeout 150 bash -c "train_run ocean-$game-cuda ocean/$game ${GPU_OCEAN_STEPS:-3000000} --backend cuda"
    timeout 150 bash -c "train_run ocean-$game-cuda-4096 ocean/$game ${GPU_OCEAN_BIG_STEPS:-10000000} --backend cuda \
      --num-envs 4096 --set train.num_steps=32 --set train.num_minibatches=4 --set train.update_epochs=2"
  done
}

solve() {  # each game's GPU profile from launch to solved, every seed: OUT/solve.json and OUT/solve.md
  # shellcheck disable=SC2086  # the lists split into words
  python3 benchmarks/gpu_profiles.py --envs $GPU_SOLVE_ENVS --seeds $GPU_SOLVE_SEEDS --out "$OUT/solve" $GPU_SOLVE_ARGS
}

solve_throughput() {  # Pong end to end at its GPU profile, a fixed budget (no stop at the solve)
  # shellcheck disable=SC2086
  train_run pong-gpu-profile ocean/pong "$GPU_PROFILE_STEPS" --profile gpu --set train.stop_on_solve=false $GPU_SOLVE_ARGS
}

solve_graphs() {  # the same with the whole update's forward and loss compiled into replayed CUDA graphs
  # shellcheck disable=SC2086
  train_run pong-gpu-graphs ocean/pong "$GPU_PROFILE_STEPS" --profile gpu --set train.stop_on_solve=false \
    --compile --set train.compile_mode=reduce-overhead $GPU_SOLVE_ARGS
}

export OUT
export -f install summarize_run train_run train_pair train_variant train_ocean_cuda solve solve_throughput solve_graphs
echo "# GPU session $(date -u +%FT%TZ)" >"$OUT/summary.md"
[ "${GPU_SESSION_INSTALL:-1}" = 0 ] || step install 150 install
# issue 51 first: launch to solved for Pong, Breakout and Snake at their GPU profiles, 3 seeds, steps/s and
# the update's share; then Pong's end-to-end throughput at that profile
step solve "${GPU_SOLVE_SECONDS:-300}" solve
step solve-throughput 120 solve_throughput
step solve-graphs 180 solve_graphs  # train.compile's cost (first update) and gain (steady steps/s) on a GPU
step doctor 60 pufferbox doctor --strict
step pytest-gpu 240 python3 -m pytest -m gpu -q -p no:cacheprovider --timeout 120 tests
step check-cuda 150 bash -c "pufferbox check tag --cuda && pufferbox check tag_continuous --cuda && pufferbox check cuda_cartpole --cuda"
step bench-cuda 180 python3 benchmarks/bench_cuda.py --part table
step bench-cuda-sweep 120 python3 benchmarks/bench_cuda.py --part sweep
step bench-cuda-kernels 150 python3 benchmarks/bench_cuda.py --part kernels
# where 1000-agent Tag's observe kernel spends its time (the largest phase of that step: RESULTS.md, "GPU: kernels")
step ncu-tag-observe 240 ncu -k tag_observe --launch-skip 20 --launch-count 1 --section SpeedOfLight \
  --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
  python3 benchmarks/bench_cuda.py --part kernels
step bench-cuda-train 180 python3 benchmarks/bench_cuda_train.py --updates 30 --warmup 1 --plot "$OUT/tag-rate-cuda.png"
# the end-to-end Tag update is most of a --backend cuda run (RESULTS.md): the same run with torch.compile's
# CUDA graphs, then its torch ops and launch overhead
step bench-cuda-train-graphs 240 python3 benchmarks/bench_cuda_train.py --updates 20 --warmup 2 --skip-peer \
  --set train.compile=true --set train.compile_mode=reduce-overhead --plot "$OUT/tag-rate-cuda-graphs.png"
step profile-tag-cuda 180 python3 benchmarks/profile_train.py tag --updates 2 --warmup 1 --set vec.backend=cuda --top 15
step train-nethack 240 train_pair nethack
step train-breakout 240 train_pair breakout $((GPU_STEPS / 2))
step train-nethack-graphs 300 train_variant graphs nethack --compile --set train.compile_mode=reduce-overhead  # CUDA graphs
step train-nethack-overlap 240 train_variant overlap nethack --set train.overlap=true
# the Ocean games' kernels (issue 37): consistency on the GPU, kernel steps/s, end-to-end PPO to solved
step pytest-gpu-ocean 240 python3 -m pytest -m gpu -q -p no:cacheprovider --timeout 120 tests/test_ocean_cuda.py
step bench-ocean-cuda 150 python3 benchmarks/bench_ocean.py --part cuda --seconds 3
step train-ocean-cuda 420 train_ocean_cuda
uptime >>"$OUT/summary.md"
