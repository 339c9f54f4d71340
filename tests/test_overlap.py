"""Overlapped PPO: V-trace against hand-computed values and GAE, one-version policy lag, no lost
or duplicated episodes across the double buffer, resume, and a clean close after Ctrl-C."""

from __future__ import annotations

import itertools
import multiprocessing
import shutil
import threading
import time

import numpy as np
import pytest
import torch

from pufferbox.registry import get_registry
from pufferbox.train.checkpoint import latest_checkpoint
from pufferbox.train.config import ConfigError, resolve_config
from pufferbox.train.learner import gae
from pufferbox.train.overlap import OverlapCollector, vtrace
from pufferbox.train.retune import restart_rollout, set_hyperparameters
from pufferbox.train.trainer import Trainer

THREAD = "pufferbox-overlap-collector"


def config(*overrides: str) -> dict:
    base = [
        "vec.num_envs=4",
        "train.num_steps=16",
        "train.checkpoint_interval=0",
        "train.total_steps=100000",
        "train.stop_on_solve=false",
        "train.overlap=true",
        "policy.hidden_size=16",
    ]
    return resolve_config(get_registry().get("cartpole").training.config, overrides=[*base, *overrides])


# -- V-trace ---------------------------------------------------------------------------------------
def test_vtrace_matches_a_hand_computed_case():
    # gamma 0.5, V = [1, 2, 3], r = [1, 1], pi/mu = [2, 0.5] -> rho = c = [1, 0.5] (truncated at 1)
    values, rewards = torch.tensor([[1.0, 2.0, 3.0]]), torch.tensor([[1.0, 1.0, 0.0]])
    behaviour = torch.zeros(1, 3)
    target = torch.log(torch.tensor([[2.0, 0.5, 1.0]]))
    no_starts = torch.zeros(1, 3, dtype=torch.bool)
    adv, vs = vtrace(behaviour, target, rewards, values, no_starts, gamma=0.5)
    # vs_1 = 2 + 0.5 (1 + 0.5*3 - 2) = 2.25 ; vs_0 = 1 + 1 (1 + 0.5*2 - 1) + 0.5*1*(2.25 - 2) = 2.125
    assert vs.tolist() == [[2.125, 2.25]]
    # adv_0 = 1 (1 + 0.5*2.25 - 1) = 1.125 ; adv_1 = 0.5 (1 + 0.5*3 - 2) = 0.25
    assert adv.tolist() == [[1.125, 0.25]]

    ends = torch.tensor([[False, False, True]])  # an episode starts at obs 2: transition 1 is terminal
    adv, vs = vtrace(behaviour, target, rewards, values, ends, gamma=0.5)
    # vs_1 = 2 + 0.5 (1 - 2) = 1.5 ; vs_0 = 1 + 1 + 0.5*(1.5 - 2) = 1.75 ; adv_0 = 1 + 0.75 - 1 ; adv_1 = 0.5 (1 - 2)
    assert vs.tolist() == [[1.75, 1.5]] and adv.tolist() == [[0.75, -0.5]]


def test_vtrace_on_policy_with_lambda_one_is_gae_lambda_one():
    gen = torch.Generator().manual_seed(3)
    rewards, values = torch.randn(5, 9, generator=gen), torch.randn(5, 9, generator=gen)
    starts = torch.rand(5, 9, generator=gen) < 0.2
    logprobs = torch.randn(5, 9, generator=gen)
    adv, vs = vtrace(logprobs, logprobs, rewards, values, starts, gamma=0.9, lam=1.0)
    gae_adv, gae_ret = gae(rewards, values, starts, gamma=0.9, lam=1.0)
    torch.testing.assert_close(vs, gae_ret)
    torch.testing.assert_close(adv, gae_adv)
    # off-policy, the truncated weights change the targets (the identity above is not vacuous)
    off, _ = vtrace(logprobs, logprobs - 1.0, rewards, values, starts, gamma=0.9, lam=1.0)
    assert not torch.allclose(off, gae_adv)


def test_lag_correction_is_validated():
    with pytest.raises(ConfigError, match="train.lag_correction: must be one of vtrace, none"):
        config("train.lag_correction=impala")
    with pytest.raises(ConfigError, match="train.overlap: expected bool"):
        config("train.overlap=1")


def test_overlap_collector_refuses_a_shared_policy_and_a_trainer_cannot_switch_modes():
    trainer = Trainer("cartpole", config("train.overlap=false"))
    try:
        with pytest.raises(ValueError, match="own copy"):
            OverlapCollector(trainer.collector, trainer.agent, trainer.agent)
        with pytest.raises(ConfigError, match="train.overlap: this trainer's collector is built for overlap=false"):
            set_hyperparameters(trainer, {"overlap": True})
    finally:
        trainer.close()


# -- semantics -------------------------------------------------------------------------------------
def fingerprint(module: torch.nn.Module) -> bytes:
    return b"".join(p.detach().cpu().numpy().tobytes() for p in module.parameters())


ON_GPU = pytest.param(
    "vtrace",
    "cuda",
    marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU that torch sees"),
    ],
    id="vtrace-cuda",
)


@pytest.mark.parametrize(("correction", "device"), [("vtrace", "cpu"), ("none", "cpu"), ON_GPU])
def test_rollouts_are_acted_by_the_policy_one_update_old_while_the_learner_updates(correction, device):
    """Every act call records the actor's weights and thread. The first act of each prefetched rollout
    waits until the learner's update has begun, and the update waits for that act: a collector that
    did not run during the update would leave both waiting (and the test failing at the timeout).
    On a GPU every act runs on the collector's own stream, and still sees the weights just copied."""
    updates, horizon = 5, 16
    trainer = Trainer(
        "cartpole",
        config(f"train.lag_correction={correction}", f"train.total_steps={updates * 4 * horizon}", f"train.device={device}"),
    )
    assert trainer.device.type == device
    versions = [fingerprint(trainer.agent)]  # versions[k]: the learner's weights after k updates
    trainer.callbacks.append(lambda metrics: versions.append(fingerprint(trainer.agent)))
    step, actor = trainer.collector.inner.acting.step, trainer.collector.actor  # the host collector's act step
    acts: list[tuple[bytes, str]] = []
    update_running, act_during_update = threading.Event(), threading.Event()
    original_act, original_update = step.forward, trainer.learner.update

    streams = set()

    def recording_act(*args, **kwargs):
        acts.append((fingerprint(actor), threading.current_thread().name))
        if device == "cuda":
            streams.add(torch.cuda.current_stream().stream_id)
        if len(acts) > horizon + 1 and (len(acts) - horizon - 2) % horizon == 0:  # first act of rollout k >= 1
            assert update_running.wait(timeout=60), "rollout started but the learner's update never ran"
            act_during_update.set()
        return original_act(*args, **kwargs)

    def waiting_update(batch, progress=0.0):
        act_during_update.clear()
        update_running.set()
        overlapped = trainer.update == updates - 1 or act_during_update.wait(timeout=60)  # the last: no prefetch
        update_running.clear()
        assert overlapped, f"no env step was taken while update {trainer.update + 1} ran"
        return original_update(batch, progress)

    step.forward, trainer.learner.update = recording_act, waiting_update
    try:
        history = trainer.train().history
    finally:
        trainer.close()
    assert {name for _, name in acts} == {THREAD}
    if device == "cuda":
        assert streams == {trainer.collector.stream.stream_id} != {torch.cuda.default_stream().stream_id}
    assert len(acts) == updates * horizon + 1  # rollout 0 stores its first step too; later ones carry it over
    for k in range(updates):  # rollout k, acted by v_{k-1} (v_0 for the first), trained on by the learner at v_k
        steps = acts[: horizon + 1] if k == 0 else acts[1 + k * horizon : 1 + (k + 1) * horizon]
        assert {fp for fp, _ in steps} == {versions[max(k - 1, 0)]}, f"rollout {k}"
        assert history[k]["policy_version"] == max(k - 1, 0)
        assert history[k]["policy_lag"] == min(k, 1)
    assert history[-1]["global_step"] == updates * 4 * horizon


def episodes_from_starts(batches: list[dict]) -> list[int]:
    """Episode lengths the stored ``starts`` imply, row by row across consecutive rollouts."""
    rows = batches[0]["starts"].shape[0]
    since, lengths = np.zeros(rows, dtype=int), []
    for batch in batches:
        for t in range(1, batch["starts"].shape[1]):
            since += 1
            for row in np.nonzero(batch["starts"][:, t].numpy())[0]:
                lengths.append(int(since[row]))
                since[row] = 0
    return sorted(lengths)


@pytest.mark.parametrize("overlap", [False, True], ids=["exact", "overlap"])
def test_no_episode_is_lost_or_duplicated_across_rollouts(overlap):
    trainer = Trainer(
        "cartpole", config(f"train.overlap={str(overlap).lower()}", "train.total_steps=1536", "train.learning_rate=0")
    )  # short random-policy episodes
    got = []
    collect = trainer.collector.collect
    trainer.collector.collect = lambda horizon=None: got.append(collect(horizon)) or got[-1]
    try:
        trainer.train()
    finally:
        trainer.close()
    assert len(got) == 1536 // 64
    for before, after in itertools.pairwise(got):  # the double buffer hands over the very next step
        assert torch.equal(after.batch["obs"][:, 0], before.batch["obs"][:, -1])
        assert torch.equal(after.batch["actions"][:, 0], before.batch["actions"][:, -1])
    for rollout in got:
        assert len(rollout.episodes) == int(rollout.batch["starts"][:, 1:].sum())
    reported = sorted(int(n) for rollout in got for n in rollout.episodes.lengths)
    assert len(reported) > 20
    assert reported == episodes_from_starts([rollout.batch for rollout in got])


def comparable(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in m.items() if k not in ("wall_time", "sps") and not k.startswith("time_")} for m in history]


def test_two_resumes_of_an_overlapped_checkpoint_train_identically(tmp_path):
    """A checkpoint leaves the rollout in flight running (no episode is cut); a resume starts a fresh
    double buffer on fresh episodes, the same for every resume of that checkpoint."""
    cfg = config("train.checkpoint_interval=2")
    per_update = 4 * 16
    first = Trainer("cartpole", cfg, run_dir=tmp_path / "split")
    first.train_steps(4 * per_update)
    first.close()
    shutil.copytree(tmp_path / "split", tmp_path / "again")
    runs = []
    for name in ("split", "again"):
        trainer = Trainer("cartpole", cfg, run_dir=tmp_path / name)
        trainer.load_checkpoint(latest_checkpoint(tmp_path / name / "checkpoints"))
        assert trainer.update == 4
        runs.append((trainer, trainer.train_steps(2 * per_update)))
        trainer.close()
    (second, resumed), (third, again) = runs
    assert comparable(resumed) == comparable(again)
    assert [m["policy_lag"] for m in resumed] == [0.0, 1.0]  # a resume starts a fresh double buffer
    for (name, a), (_, b) in zip(second.agent.state_dict().items(), third.agent.state_dict().items()):
        assert torch.equal(a, b), name


def test_ctrl_c_then_close_leaves_no_thread_or_worker_process():
    trainer = Trainer("cartpole", config("vec.backend=multiprocessing", "vec.num_workers=2"))
    workers = multiprocessing.active_children()
    assert workers, "the multiprocessing backend runs worker processes"

    def interrupt(metrics: dict) -> None:
        if metrics["update"] == 2:  # rollout 3 is in flight in the collector thread
            raise KeyboardInterrupt

    step = trainer.collector.inner.acting.step
    act = step.forward
    step.forward = lambda *a, **k: time.sleep(0.01) or act(*a, **k)  # a rollout still running at close
    trainer.callbacks.append(interrupt)
    with pytest.raises(KeyboardInterrupt):
        trainer.train()
    assert trainer.collector.thread is not None  # launched, never joined by the interrupted loop
    trainer.close()
    assert not any(t.name == THREAD for t in threading.enumerate())
    assert not any(p.is_alive() for p in workers)
    assert multiprocessing.active_children() == []


def test_overlap_rejects_the_cuda_backend_with_a_one_line_error():
    with pytest.raises(ConfigError, match="train.overlap=true: --backend cuda") as err:
        Trainer("cartpole", config("vec.backend=cuda", "vec.device=host"))
    assert "\n" not in str(err.value)


def test_the_learner_uses_targets_given_with_the_batch_instead_of_gae():
    """``advantages``/``returns`` in the batch (V-trace's) replace GAE's: zero advantages, zero policy loss."""
    from tiny import tiny_agent, tiny_batch

    from pufferbox.train.config import TrainConfig
    from pufferbox.train.learner import Learner
    from pufferbox.train.overlap import vtrace_targets

    segments, horizon = 3, 5
    agent, batch = tiny_agent(), tiny_batch(segments, horizon)
    hp = TrainConfig(num_minibatches=1, update_epochs=1, norm_adv=False, ent_coef=0.0)
    zero = {"advantages": torch.zeros(segments, horizon), "returns": torch.zeros(segments, horizon)}
    assert Learner(agent, hp).update(batch | zero)["policy_loss"] == 0.0
    assert Learner(agent, hp).update(batch)["policy_loss"] != 0.0  # GAE's advantages of the reward-1 batch

    rebased = vtrace_targets(agent, batch, gamma=0.9, lam=1.0)  # rescored by the current weights
    logprobs, _, values = agent.evaluate(batch["obs"].reshape(-1, 4), batch["actions"].reshape(-1))
    torch.testing.assert_close(rebased["logprobs"], logprobs.reshape(segments, horizon + 1))
    torch.testing.assert_close(rebased["values"], values.reshape(segments, horizon + 1))
    assert rebased["advantages"].shape == rebased["returns"].shape == (segments, horizon)


def test_overlap_trains_with_an_async_pool():
    trainer = Trainer(
        "cartpole",
        config(
            "vec.backend=multiprocessing",
            "vec.num_envs=8",
            "vec.num_workers=4",
            "vec.batch_size=4",
            "train.total_steps=1024",
        ),
    )
    try:
        history = trainer.train().history
    finally:
        trainer.close()
    assert [m["policy_lag"] for m in history[:3]] == [0.0, 1.0, 1.0]
    assert history[-1]["global_step"] >= 1024 and all(np.isfinite(m["policy_loss"]) for m in history)


@pytest.mark.parametrize("lstm", [False, True], ids=["mlp", "lstm"])
def test_rescoring_an_on_policy_rollout_gives_back_what_the_actor_stored(lstm):
    """The first rollout is acted by the learner's own weights: rescoring it (V-trace's target policy) must
    reproduce the stored logprobs and values, row by row and step by step (LSTM: unrolled per segment)."""
    from pufferbox.train.overlap import rescore

    trainer = Trainer("cartpole", config(f"policy.lstm={str(lstm).lower()}", "vec.native=false"))
    try:
        batch = trainer.collector.collect().batch
        logprobs, values = rescore(trainer.agent, batch)
    finally:
        trainer.close()
    torch.testing.assert_close(logprobs, batch["logprobs"], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(values, batch["values"], rtol=1e-4, atol=1e-5)


class FailingCollector:
    venv, horizon, phase_time = None, 4, {"env": 0.0, "inference": 0.0}

    def collect(self, horizon=None):
        raise RuntimeError("worker 1 died")


def test_an_error_in_the_collector_thread_is_raised_by_collect():
    actor, learner = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
    collector = OverlapCollector(FailingCollector(), actor, learner)
    with pytest.raises(RuntimeError, match="worker 1 died"):
        collector.collect()
    assert collector.thread is None
    collector.close()


def test_restart_counts_the_dropped_rollout_as_unrecorded_steps():
    """A tournament pod restarts the rollout for new weights: the prefetched rollout moved the envs too."""
    trainer = Trainer("cartpole", config())
    try:
        trainer.train_steps(2 * 64)
        assert trainer.collector.thread is not None
        assert restart_rollout(trainer) == 64 + 4  # one rollout of 4 rows x 16 steps, then 4 pending actions
        assert trainer.collector.thread is None
        assert trainer.train_update()["policy_lag"] == 0.0  # a fresh double buffer, acted by the new weights
    finally:
        trainer.close()
