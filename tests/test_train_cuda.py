"""`pufferbox train ENV --backend cuda`: PPO with rollout, sampling and update on the kernels' device.

Without a GPU the same kernel sources run on the CPU (``--set vec.device=host``, torch on the
CPU), which checks the whole device path here: it trains, it makes no per-step transfers, it
learns. The ``gpu`` tests repeat the transfer check with CUDA's own sync detection.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from pufferbox.cli import cli, load_commands
from pufferbox.cuda.device import gpu_unavailable_reason
from pufferbox.cuda.hostsim import find_cxx
from pufferbox.registry import get_registry
from pufferbox.train.config import ConfigError, resolve_config
from pufferbox.train.trainer import Trainer

GPU_REASON = gpu_unavailable_reason()
needs_cxx = pytest.mark.skipif(find_cxx() is None, reason="no C++ compiler to build kernels for the host")
needs_gpu = [
    pytest.mark.gpu,
    pytest.mark.skipif(GPU_REASON is not None, reason=f"needs a CUDA GPU and PyCUDA ({GPU_REASON})"),
]


def host_config(env: str, *overrides: str) -> dict:
    return resolve_config(
        get_registry().get(env).training.config,
        overrides=[
            "vec.backend=cuda",
            "vec.device=host",
            "vec.num_envs=8",
            "train.num_steps=16",
            "train.checkpoint_interval=0",
            "policy.hidden_size=32",
            *overrides,
        ],
    )


class SyncGuard(torch.overrides.TorchFunctionMode):
    """Raises on any tensor operation that reads device data on the host (a transfer and a sync on a GPU).

    On the host simulator every tensor is a CPU tensor, so these calls would go unnoticed by the
    data manager's transfer counters; forbidding them proves the loop never asks for one.
    """

    FORBIDDEN = {
        "item",
        "tolist",
        "numpy",
        "cpu",
        "nonzero",
        "masked_select",
        "__bool__",
        "__int__",
        "__float__",
        "__index__",
        "__array__",
        "__len__",
    }

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        if name in self.FORBIDDEN:
            raise AssertionError(f"host read inside the rollout loop: {name}")
        if name in ("__getitem__", "__setitem__") and any(
            isinstance(i, torch.Tensor) and i.dtype == torch.bool
            for i in (args[1] if isinstance(args[1], tuple) else (args[1],))
        ):
            raise AssertionError("boolean indexing (its size depends on device data) inside the rollout loop")
        if name == "to" and any(
            isinstance(a, (str, torch.device)) and torch.device(a).type == "cpu"
            for a in (*args[1:], kwargs.get("device", "cuda"))
        ):
            raise AssertionError("host copy inside the rollout loop: .to('cpu')")
        return func(*args, **kwargs)


def guard_steps(rollout, mode_factory) -> list[int]:
    """Run every rollout step under ``mode_factory()``; returns the steps seen."""
    seen, step = [], rollout.step

    def guarded(t):
        seen.append(t)
        with mode_factory():
            step(t)

    rollout.step = guarded
    return seen


@needs_cxx
@pytest.mark.parametrize("env,extra", [("cuda_cartpole", []), ("tag", ["env.num_runners=3"])])
def test_trains_end_to_end_on_the_host_simulator(env, extra, tmp_path):
    """The CLI path: run directory, metrics with losses, episodes (and Tag's tag rate), a checkpoint."""
    load_commands()
    run_dir = tmp_path / "run"
    args = [
        "train",
        env,
        "--backend",
        "cuda",
        "--set",
        "vec.device=host",
        "--num-envs",
        "6",
        "--total-steps",
        str(6 * 32 * 4 * (4 if env == "tag" else 1)),
        "--set",
        "train.num_steps=32",
        "--run-dir",
        str(run_dir),
        "--no-tensorboard",
        *[x for o in extra for x in ("--set", o)],
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == 4 and metrics[-1]["global_step"] == metrics[0]["global_step"] * 4
    assert all(np.isfinite(m["policy_loss"]) and np.isfinite(m["value_loss"]) for m in metrics)
    assert sum(m["episodes"] for m in metrics) > 0 and all(m["episodes_dropped"] == 0 for m in metrics)
    if env == "tag":
        assert all(0 <= m["tag_rate"] < 4 for m in metrics) and sum(m["tag_rate"] for m in metrics) > 0
    else:
        assert "tag_rate" not in metrics[0]
    assert list((run_dir / "checkpoints").glob("ckpt-*.pt"))


@needs_cxx
def test_rollout_makes_no_per_step_transfers():
    """Pushes/pulls of the data manager: none while stepping, only episode_stats' two reads per rollout."""
    trainer = Trainer("tag", host_config("tag", "train.num_steps=24"))
    data, rollout = trainer.venv.kernel.data, trainer.collector
    seen = guard_steps(rollout, SyncGuard)
    counts = []
    for _ in range(3):
        pushes, pulls = data.pushes, data.pulls
        trainer.train_update()
        counts.append((data.pushes - pushes, data.pulls - pulls))
    assert seen[:25] == list(range(25)) and seen[25:49] == list(range(1, 25))  # every step ran guarded
    assert all(pushes == 0 and pulls <= 2 for pushes, pulls in counts), counts
    assert trainer.history[-1]["tag_rate"] >= 0
    trainer.close()


def test_sync_guard_catches_host_reads():
    """The guard used above is not vacuous: per-step host reads of the kinds a trainer might do fail."""
    x = torch.ones(3)
    for read in (
        lambda: x.sum().item(),
        lambda: x.cpu(),
        lambda: x.numpy(),
        lambda: bool(x.any()),
        lambda: float(x[0]),
        lambda: x.to("cpu"),
        lambda: x[x > 0],
    ):
        with pytest.raises(AssertionError, match="inside the rollout loop"), SyncGuard():
            read()


@needs_cxx
@pytest.mark.parametrize(
    "lstm,sampler", [(False, True), (True, True), (False, False)], ids=["mlp", "lstm", "mlp-torch-sampling"]
)
def test_stored_rollout_is_consistent(lstm, sampler):
    """Stored logprobs and values are the policy's for the stored actions (sampler kernel, or torch's
    sampling when off); segments carry over; starts match the finished episodes."""
    trainer = Trainer("cuda_cartpole", host_config("cuda_cartpole", f"policy.lstm={str(lstm).lower()}"))
    ro, steps = trainer.collector, trainer.num_steps
    assert ro.use_sampler
    ro.use_sampler = sampler
    collected = ro.collect()
    infos, seg = collected.episodes, collected.batch
    with torch.no_grad():
        if lstm:
            logprob, _, value = trainer.agent.evaluate(
                seg["obs"][:, :steps].transpose(0, 1),
                seg["actions"][:, :steps].transpose(0, 1),
                (seg["h"][:, 0], seg["c"][:, 0]),
                seg["starts"][:, :steps].transpose(0, 1),
            )
            logprob, value = (x.reshape(steps, -1).transpose(0, 1) for x in (logprob, value))
        else:
            logprob, _, value = trainer.agent.evaluate(
                seg["obs"][:, :steps].reshape(-1, 4), seg["actions"][:, :steps].reshape(-1)
            )
            logprob, value = logprob.reshape(-1, steps), value.reshape(-1, steps)
    torch.testing.assert_close(logprob, seg["logprobs"][:, :steps], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(value, seg["values"][:, :steps], rtol=1e-5, atol=1e-5)
    assert set(seg["actions"].unique().tolist()) == {0, 1}
    assert (seg["rewards"][:, :steps] == 1).all() and seg["masks"].all()
    # an episode ends where the next one starts: starts inside the segment give every finished episode
    ended = seg["starts"][:, 1:].sum().item()
    assert ended == len(infos) > 0
    last = {k: v[:, steps].clone() for k, v in seg.items()}
    ro.collect()
    for name, value in last.items():
        if name != "rewards":  # the reward of the carried step arrives in the next rollout
            torch.testing.assert_close(seg[name][:, 0], value, msg=name)
    trainer.close()


@needs_cxx
def test_cuda_cartpole_return_rises_on_the_host_simulator():
    """A learning signal, fast and deterministic: counter-based kernel RNG, seeded torch."""
    trainer = Trainer(
        "cuda_cartpole",
        host_config(
            "cuda_cartpole",
            "vec.num_envs=16",
            "train.num_steps=64",
            "policy.hidden_size=64",
            "train.learning_rate=0.001",
            "train.total_steps=12288",
        ),
    )
    history = trainer.train_steps(12 * 16 * 64)
    first = history[0]["episode_return"]
    late = [m["episode_return"] for m in history[-3:] if m["episode_return"] is not None]
    assert first < 30 and late and np.mean(late) > 2 * first, [m["episode_return"] for m in history]
    trainer.close()


def test_vec_device_host_needs_the_cuda_backend():
    cfg = resolve_config(overrides=["vec.device=host"])
    with pytest.raises(ConfigError, match="vec.device='host' only applies to --backend cuda"):
        Trainer("cartpole", cfg)


@pytest.mark.skipif(GPU_REASON is None, reason="this machine has a GPU: the check is for machines without one")
def test_cli_on_a_cpu_machine_names_the_cpu_backends(tmp_path):
    load_commands()
    result = CliRunner().invoke(cli, ["train", "tag", "--backend", "cuda", "--run-dir", str(tmp_path / "r")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: no CUDA GPU"), result.output
    assert "--backend serial" in lines[0] and "multiprocessing" in lines[0]


@pytest.mark.parametrize("device", [pytest.param("gpu", marks=needs_gpu)])
def test_gpu_rollout_has_no_synchronizing_transfers(device):
    """On a GPU: CUDA's sync detection errors on any synchronizing op in a step; the profiler sees only
    the once-per-rollout reads (episode statistics and the tag counter), however long the rollout."""
    copies = []
    for num_steps in (16, 64):
        trainer = Trainer(
            "tag",
            resolve_config(
                get_registry().get("tag").training.config,
                overrides=[
                    "vec.backend=cuda",
                    "vec.num_envs=256",
                    f"train.num_steps={num_steps}",
                    "train.checkpoint_interval=0",
                ],
            ),
        )
        assert trainer.device.type == "cuda" and trainer.collector.obs.device.type == "cuda"
        trainer.train_update()  # warm-up: cuBLAS handles, allocator

        class SyncErrors:
            def __enter__(self):
                torch.cuda.set_sync_debug_mode("error")

            def __exit__(self, *exc):
                torch.cuda.set_sync_debug_mode("default")

        guard_steps(trainer.collector, SyncErrors)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            trainer.collector.collect()
            torch.cuda.synchronize()
        copies.append(len([e for e in prof.events() if "Memcpy HtoD" in e.name or "Memcpy DtoH" in e.name]))
        trainer.close()
    # per rollout: finished count, episode log (once an episode ended), tag counter, truncated-slot flags
    assert all(n <= 4 for n in copies), copies


@pytest.mark.parametrize("device", [pytest.param("gpu", marks=needs_gpu)])
def test_gpu_tag_training_records_tag_rate(device, tmp_path):
    load_commands()
    num_steps = resolve_config(get_registry().get("tag").training.config)["train"]["num_steps"]
    result = CliRunner().invoke(
        cli,
        [
            "train",
            "tag",
            "--backend",
            "cuda",
            "--num-envs",
            "2000",
            "--total-steps",
            str(2000 * 5 * num_steps * 3),
            "--run-dir",
            str(tmp_path / "r"),
            "--no-tensorboard",
        ],
    )
    assert result.exit_code == 0, result.output
    metrics = [json.loads(line) for line in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == 3 and all(m["tag_rate"] > 0 for m in metrics)


@needs_cxx
def test_rollout_event_metrics_are_the_ones_the_plugin_declares():
    """Tag's tag rate comes from its CudaImplementation.events, not from a name the trainer knows."""
    import dataclasses

    spec = get_registry().get("tag")
    assert dict(spec.build.cuda.events) == {"tagged": "tag_rate"}
    renamed = dataclasses.replace(
        spec,
        build=dataclasses.replace(spec.build, cuda=dataclasses.replace(spec.build.cuda, events={"tagged": "tags_per_step"})),
    )
    silent = dataclasses.replace(
        spec, build=dataclasses.replace(spec.build, cuda=dataclasses.replace(spec.build.cuda, events={}))
    )
    for env, expected in ((renamed, {"tags_per_step"}), (silent, set())):
        trainer = Trainer(env, host_config("tag", "train.num_steps=8"))
        try:
            metrics = trainer.train_update()
            assert {k for k in metrics if k in ("tag_rate", "tags_per_step")} == expected
        finally:
            trainer.close()
