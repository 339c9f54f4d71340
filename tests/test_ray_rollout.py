"""Remote rollouts on Ray: K steps per call, the policy on the actors, training and faults."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch

import pufferbox.vector as vector
from pufferbox.registry import get_registry
from pufferbox.vector.base import EnvFactory
from pufferbox.vector.testenvs import env_spec_for

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

from pufferbox.vector.ray_rollout import RayRollouts  # noqa: E402


def rollouts(env: str = "cartpole", num_envs: int = 4, num_workers: int = 2, **kwargs) -> RayRollouts:
    spec = env_spec_for(env, **kwargs.pop("env_kwargs", {})) if env == "uneven" else get_registry().get(env)
    return RayRollouts(EnvFactory(spec, use_native=False), num_envs=num_envs, num_workers=num_workers, **kwargs)


def test_a_rollout_is_the_serial_trajectory_and_segments_continue(local_ray) -> None:
    """The actors' K steps per call are the steps serial envs take with the same actions and seeds."""
    with rollouts() as r:
        r.reset(seed=5)
        r.submit_idle(steps=16)
        first = r.wait(2)
        assert [x.arrays["obs"].shape for x in first] == [(2, 17, 4), (2, 17, 4)]
        r.submit_idle(steps=16)
        second = r.wait(2)
    obs = np.concatenate([x.arrays["obs"] for x in first])
    actions = np.concatenate([x.arrays["actions"] for x in first])
    starts = np.concatenate([x.arrays["starts"] for x in first])
    assert starts[:, 0].all(), "a fresh rollout starts every row's episode"
    with vector.make("cartpole", backend="serial", num_envs=4, native=False) as serial:
        got, _ = serial.reset(seed=5)
        np.testing.assert_array_equal(got, obs[:, 0])
        for t in range(16):
            got, _, term, trunc, _ = serial.step(actions[:, t])
            np.testing.assert_array_equal(got, obs[:, t + 1])
            np.testing.assert_array_equal(term | trunc, starts[:, t + 1])
    for a, b in zip(first, second):  # slot K of a segment is slot 0 of the next
        for key in ("obs", "actions", "starts", "masks"):
            np.testing.assert_array_equal(a.arrays[key][:, 16], b.arrays[key][:, 0])


def test_steps_per_call_follow_the_measured_step_time(local_ray) -> None:
    """Without a policy K is chosen so a call carries ``min_call_seconds`` of simulation."""
    with rollouts("uneven", env_kwargs={"mean_step_s": 1e-3}, num_envs=2, num_workers=2, min_call_seconds=0.02) as r:
        assert r.auto_steps() == 8  # nothing measured yet
        r.reset(seed=0)
        r.submit_idle(steps=50)
        r.wait(2)
        measured = float(np.mean(r.step_seconds))
        # a lower bound only: the env sleeps ~1 ms a step, and a busy machine stretches that without limit
        assert measured >= 0.8e-3, f"one env per actor, ~1 ms per step: {measured}"
        assert r.auto_steps() == int(np.ceil(0.02 / measured))  # ~20 steps carry the 20 ms


def test_a_pool_returns_the_first_actors_done(local_ray) -> None:
    with rollouts("uneven", env_kwargs={"mean_step_s": 1e-3}, num_envs=4, num_workers=4, batch_size=1) as r:
        r.reset(seed=0)
        r.submit(0, 400)  # ~0.4 s
        for w in (1, 2, 3):
            r.submit(w, 2)
        got = r.wait()
        assert len(got) == 1 and got[0].worker != 0
        assert len(r.pending) == 3


def train_config(backend: str, total_steps: int = 512, **extra: str) -> dict:
    from pufferbox.train.config import resolve_config

    overrides = [
        f"vec.backend={backend}",
        "vec.num_envs=8",
        "vec.native=false",
        "train.num_steps=32",
        f"train.total_steps={total_steps}",
        "train.learning_rate=1e-3",
    ]
    overrides += ["vec.num_workers=2"] if backend == "ray" else []
    return resolve_config(overrides=overrides + [f"{k}={v}" for k, v in extra.items()])


def test_ray_collector_batch_has_the_host_layout_and_the_broadcast_logprobs(local_ray) -> None:
    from pufferbox.train.ray_collector import RayCollector
    from pufferbox.train.trainer import Trainer

    host = Trainer("cartpole", train_config("serial"))
    remote = Trainer("cartpole", train_config("ray"))
    try:
        assert isinstance(remote.collector, RayCollector)
        expected, got = host.collector.collect(), remote.collector.collect()
        assert got.steps == expected.steps == 8 * 32
        assert {k: (v.shape, v.dtype) for k, v in got.batch.items()} == {
            k: (v.shape, v.dtype) for k, v in expected.batch.items()
        }
        for _ in range(2):  # the weights of each update reach the actors before its rollout
            before = {k: v.clone() for k, v in remote.agent.state_dict().items()}
            previous = got.batch
            remote.learner.update(previous)
            assert any(not torch.equal(before[k], v) for k, v in remote.agent.state_dict().items())
            got = remote.collector.collect()
            b = {k: v[:, 1:] for k, v in got.batch.items()}  # slot 0: the previous rollout's last action
            with torch.no_grad():
                logprob, _, value = remote.agent.evaluate(b["obs"].reshape(-1, 4), b["actions"].reshape(-1))
            torch.testing.assert_close(logprob, b["logprobs"].reshape(-1), atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(value, b["values"].reshape(-1), atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(got.batch["logprobs"][:, 0], previous["logprobs"][:, -1])
            assert got.metrics["policy_lag"] == 0.0
        remote.agent.load_state_dict(before)  # the previous update's weights do not explain the batch
        with torch.no_grad():
            stale, _, _ = remote.agent.evaluate(b["obs"].reshape(-1, 4), b["actions"].reshape(-1))
        assert not torch.allclose(stale, b["logprobs"].reshape(-1), atol=1e-4)
    finally:
        host.close()
        remote.close()


def test_a_trainer_updates_on_remote_rollouts(local_ray) -> None:
    """The mechanism: every update learns on a whole remote batch (none lost) and moves the weights;
    that CartPole's return then rises is the training benchmarks' (benchmarks/bench_ray.py)."""
    from pufferbox.train.trainer import Trainer

    trainer = Trainer("cartpole", train_config("ray", total_steps=3 * 8 * 32))
    try:
        before = [p.detach().clone() for p in trainer.agent.parameters()]
        history = trainer.train().history
        after = list(trainer.agent.parameters())
    finally:
        trainer.close()
    assert [h["global_step"] for h in history] == [256, 512, 768]
    assert all(h["lost_steps"] == 0 and np.isfinite(h["policy_loss"]) for h in history)
    assert any(not torch.equal(b, a) for b, a in zip(before, after, strict=True)), "no update moved the weights"


def test_a_killed_actor_is_replaced_with_its_envs_rebuilt_from_their_seeds(local_ray) -> None:
    from pufferbox.train.policies import build_agent
    from pufferbox.train.ray_collector import RayCollector

    r = rollouts("uneven", env_kwargs={"mean_step_s": 2e-3}, num_envs=4, num_workers=2)
    try:
        agent = build_agent(r.obs_spec, r.act_spec, {"hidden_size": 16})
        collector = RayCollector(r, agent, horizon=200)  # ~0.8 s of steps per actor
        collector.reset(seed=7)
        victim = r.actors[1]
        threading.Timer(0.3, lambda: ray.kill(victim)).start()
        got = collector.collect()
        assert r.actors[1] is not victim
        assert got.metrics["actors_replaced"] == 1.0
        assert got.metrics["lost_steps"] == 2 * 200, "the killed actor's in-flight segment is reported lost"
        assert got.steps == 4 * 200 and got.batch["obs"].shape == (4, 201, 4)
        # Rebuilt from the last reset's seeds: the new actor's first obs is env 2's and 3's reset obs.
        spec = env_spec_for("uneven", mean_step_s=0.0)
        with vector.make(spec, backend="serial", num_envs=4) as serial:
            reset_obs, _ = serial.reset(seed=7)
        np.testing.assert_array_equal(got.batch["obs"][2:, 0].numpy(), reset_obs[2:])
        again = collector.collect()  # training goes on with the replacement
        assert again.metrics["lost_steps"] == 0.0 and again.steps == 4 * 200
    finally:
        r.close()


def wait_until_dead(ray, actor, timeout_s: float = 30.0) -> None:
    """Block until ``actor`` answers calls with Ray's actor-died error (``ray.kill`` only requests it)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get(actor.pid.remote(), timeout=timeout_s)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError(f"the killed actor still answers after {timeout_s} s")


def test_an_actor_that_dies_before_a_reset_is_replaced_and_reset(local_ray) -> None:
    """Found by the chaos suite: an actor killed while the trainer re-seeds at a checkpoint made
    ``reset`` raise Ray's ActorDiedError (a traceback); the setup calls now replace it too."""
    from pufferbox.train.policies import build_agent
    from pufferbox.train.ray_collector import RayCollector

    r = rollouts("uneven", env_kwargs={"mean_step_s": 0.0}, num_envs=4, num_workers=2)
    try:
        collector = RayCollector(r, build_agent(r.obs_spec, r.act_spec, {"hidden_size": 16}), horizon=8)
        collector.reset(seed=7)
        victim = r.actors[0]
        local_ray.kill(victim)
        wait_until_dead(local_ray, victim)  # ray.kill is asynchronous: a call sent right after may still run
        collector.reset(seed=11)  # reset (every actor) reaches the dead one: replaced, then reset
        assert r.actors[0] is not victim and r.replaced == 1
        got = collector.collect()
        spec = env_spec_for("uneven", mean_step_s=0.0)
        with vector.make(spec, backend="serial", num_envs=4) as serial:
            reset_obs, _ = serial.reset(seed=11)
        np.testing.assert_array_equal(got.batch["obs"][:, 0].numpy(), reset_obs)
    finally:
        r.close()


def test_train_cli_with_the_ray_backend_uses_remote_rollouts(local_ray, tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from pufferbox.cli import cli, load_commands

    load_commands()
    result = CliRunner().invoke(
        cli,
        [
            "train",
            "cartpole",
            "--backend",
            "ray",
            "--num-envs",
            "4",
            "--num-workers",
            "2",
            "--total-steps",
            "1024",
            "--run-dir",
            str(tmp_path / "run"),
            "--no-tensorboard",
        ],
    )
    assert result.exit_code == 0, result.output
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert metrics[-1]["global_step"] == 1024
    assert all(m["lost_steps"] == 0 and m["policy_lag"] == 0 for m in metrics), "the ray collector's metrics"


def test_a_pool_collector_takes_the_first_actors_and_reports_the_policy_lag(local_ray) -> None:
    from pufferbox.train.policies import build_agent
    from pufferbox.train.ray_collector import RayCollector

    r = rollouts("uneven", env_kwargs={"mean_step_s": 2e-4}, num_envs=8, num_workers=4, batch_size=4)
    try:
        agent = build_agent(r.obs_spec, r.act_spec, {"hidden_size": 16})
        collector = RayCollector(r, agent, horizon=32)
        collector.reset(seed=0)
        lags = []
        for _ in range(4):
            got = collector.collect()
            assert got.steps == 8 * 32 and got.batch["obs"].shape == (8, 33, 4)
            lags.append(got.metrics["policy_lag"])
            assert len(r.pending) >= 2, "the actors not in the batch keep running"
        assert lags[0] == 0.0 and max(lags) > 0.0, f"segments acted before the last broadcast count as lag: {lags}"
    finally:
        r.close()


@pytest.mark.parametrize(
    "mode,error,message",
    [
        ("raise", "WorkerError", r"rollout worker 1 \(envs 2-3\): env 3 raised ValueError: deliberate failure"),
        ("hang", "WorkerTimeoutError", r"worker 1 \(envs 2-3\) did not answer within step_timeout=2s"),
    ],
)
def test_an_env_that_raises_or_hangs_in_a_rollout_is_named(local_ray, mode: str, error: str, message: str) -> None:
    from pufferbox.vector import base

    spec = env_spec_for("faulty", fail_at=3, mode=mode, fail_env_seed=3)  # env 3 of seed 0: worker 1's
    r = RayRollouts(EnvFactory(spec), num_envs=4, num_workers=2, step_timeout=2.0)
    try:
        r.reset(seed=0)
        r.submit_idle(steps=10)
        with pytest.raises(getattr(base, error), match=message):
            r.wait(2)
        assert r.closed and not r.actors
    finally:
        r.close()


def test_pipelined_calls_of_a_killed_actor_are_replaced_once_and_all_run_again(local_ray) -> None:
    with rollouts("uneven", env_kwargs={"mean_step_s": 2e-3}, num_envs=4, num_workers=2) as r:
        r.reset(seed=0)
        r.submit_idle(steps=100, depth=2)  # ~0.4 s per call
        assert sorted(w for w, _ in r.pending.values()) == [0, 0, 1, 1]
        victim = r.actors[1]
        threading.Timer(0.15, lambda: ray.kill(victim)).start()
        got = r.wait(4)
        assert sorted(x.worker for x in got) == [0, 0, 1, 1]
        assert r.replaced == 1 and r.lost_steps == 2 * 100 * 2, "both calls in flight on the killed actor are lost"
        assert all(x.arrays["obs"].shape == (2, 101, 4) for x in got)


@pytest.mark.parametrize("fault", ["observation", "logits"])
def test_non_finite_observations_and_logits_on_the_actors_are_named_as_on_the_host(local_ray, fault: str) -> None:
    """Issue 38, defect 6 on --backend ray: the actors check before their policy acts, and the collector
    raises the host collector's NonFiniteInput naming the run-wide env (not torch's sampler traceback)."""
    from pufferbox.train.collector import NonFiniteInput
    from pufferbox.train.config import PolicyConfig
    from pufferbox.train.policies import build_agent
    from pufferbox.train.ray_collector import RayCollector

    mode = "nan_obs" if fault == "observation" else "raise"
    factory = EnvFactory(env_spec_for("faulty", fail_at=3 if fault == "observation" else 10**6, mode=mode, fail_env_seed=3))
    obs_spec, act_spec, _ = factory.layout()
    agent = build_agent(obs_spec, act_spec, PolicyConfig(hidden_size=8))
    if fault == "logits":
        with torch.no_grad():
            next(agent.parameters()).fill_(float("nan"))  # what an overflowing update leaves
    expected = {
        "observation": r"^env 3 \(agent row 3\) returned an observation with NaN/inf$",  # worker 1's second env
        "logits": r"^the policy's logits are NaN/inf",
    }[fault]
    r = RayRollouts(factory, num_envs=4, num_workers=2)
    try:
        collector = RayCollector(r, agent, horizon=8)
        collector.reset(seed=0)
        with pytest.raises(NonFiniteInput, match=expected):
            collector.collect()
        assert r.closed
    finally:
        r.close()
