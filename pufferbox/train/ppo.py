"""PPO, readable top to bottom (CleanRL style) over any pufferbox vector backend.

The loop is ``recv → store → act → send``. Rows are agent slots (``env_id *
agents_per_env + agent``). The rollout is stored in segments of ``num_steps``
transitions, each filled by one row along its own time axis, so an async pool (batches
of any envs, in any order) keeps every row's steps in order and GAE runs along segments.
An update happens once ``num_rows`` segments are full (PufferLib's approach).

Conventions:

* Autoreset is SAME_STEP: the obs that comes with ``done`` is the next episode's first
  obs, so ``starts[row, t]`` ("an episode starts at obs t") is the CleanRL ``dones[t]``.
  Truncation is treated like termination (no bootstrap from the final obs, which the
  env replaced): simple, and what CleanRL does.
* ``masks[row, t]`` False (padded agent slot) removes transition t of that row from
  every loss and statistic.
* Recurrent policies store their LSTM state per row and step; training unrolls each
  row's segment from its first stored state, resetting at episode starts (truncated BPTT).
* ``--backend cuda``: the rollout is a :class:`~pufferbox.train.device_rollout.DeviceRollout`
  of tensors on the kernels' device (same layout, one segment per row, no per-step host
  transfer); GAE and the PPO update below are the same code, run on that device.
* Reproducible resume: at every ``checkpoint_interval``-th update the envs are re-seeded
  from ``(seed, update)``; a checkpoint taken there plus torch's RNG states determine the
  rest of the run, so a resumed run matches an uninterrupted one on the serial backend.

Example:
    >>> from pufferbox.train.config import resolve_config
    >>> cfg = resolve_config(overrides=["train.total_steps=1024", "vec.num_envs=4", "train.num_steps=32"])
    >>> trainer = Trainer("cartpole", cfg)            # doctest: +SKIP
    >>> trainer.train_steps(1024)[-1]["global_step"]  # doctest: +SKIP
    1024
"""

from __future__ import annotations

import collections
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
import tomli_w
from torch import nn

from pufferbox.cuda.episodes import DEFAULT_SLOTS as DEFAULT_EPISODE_SLOTS
from pufferbox.registry import EnvSpec, get_registry
from pufferbox.train.checkpoint import load_checkpoint, save_checkpoint
from pufferbox.train.config import ConfigError
from pufferbox.train.device_rollout import DeviceRollout
from pufferbox.train.optim import Adam
from pufferbox.train.policies import build_agent
from pufferbox.episodes import episodes_from_infos

__all__ = ["Trainer", "TrainResult", "Rollout"]

CHECKPOINT_FORMAT = 1


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"train.device: {name!r} requested but torch sees no CUDA device; use --device cpu")
    try:
        return torch.device(name)
    except RuntimeError:
        raise ConfigError(f"train.device: unknown device {name!r}; use cpu, cuda, cuda:N or auto") from None


class Rollout:
    """Rollout storage in *segments* of ``horizon`` transitions (+1 bootstrap obs) each.

    Every agent row writes into its own current segment along its own time axis; a full
    segment's last obs is also the first obs of the row's next segment. Torch tensors on
    the CPU with numpy views for cheap writes. With a pool, fast rows may fill several
    segments while slow ones fill part of one (PufferLib's "train on full segments").
    """

    def __init__(self, rows: int, segments: int, horizon: int, obs_shape: tuple, obs_dtype: np.dtype,
                 act_shape: tuple, act_dtype: np.dtype, lstm_size: int = 0):
        def tensor(shape: tuple, dtype: Any) -> tuple[torch.Tensor, np.ndarray]:
            t = torch.from_numpy(np.zeros((segments, horizon + 1, *shape), dtype=dtype))
            return t, t.numpy()

        self.rows, self.segments, self.horizon = rows, segments, horizon
        self.obs, self.np_obs = tensor(obs_shape, obs_dtype)
        self.actions, self.np_actions = tensor(act_shape, act_dtype)
        self.logprobs, self.np_logprobs = tensor((), np.float32)
        self.values, self.np_values = tensor((), np.float32)
        self.rewards, self.np_rewards = tensor((), np.float32)
        self.starts, self.np_starts = tensor((), np.bool_)
        self.masks, self.np_masks = tensor((), np.bool_)
        self.lstm = lstm_size > 0
        if self.lstm:
            self.h, self.np_h = tensor((lstm_size,), np.float32)
            self.c, self.np_c = tensor((lstm_size,), np.float32)
        self.clear()

    def clear(self) -> None:
        self.seg = np.arange(self.rows)  # the segment each row writes to
        self.ptr = np.zeros(self.rows, dtype=np.int64)  # obs stored in it so far
        self.full = np.zeros(self.segments, dtype=bool)
        self.free = list(range(self.rows, self.segments))
        self.waiting = np.zeros(0, dtype=np.int64)  # rows with a full segment and no fresh one yet

    def arrays(self) -> list[np.ndarray]:
        out = [self.np_obs, self.np_actions, self.np_logprobs, self.np_values, self.np_rewards,
               self.np_starts, self.np_masks]
        return out + ([self.np_h, self.np_c] if self.lstm else [])

    def take(self, segs: np.ndarray) -> dict[str, torch.Tensor]:
        """Segments ``segs`` of every stored array, ``(len(segs), horizon + 1, ...)`` (CPU gathers)."""
        idx = torch.from_numpy(segs)
        out = {"obs": self.obs, "actions": self.actions, "logprobs": self.logprobs, "values": self.values,
               "rewards": self.rewards, "starts": self.starts, "masks": self.masks}
        out |= {"h": self.h, "c": self.c} if self.lstm else {}
        return {name: x[idx] for name, x in out.items()}

    def carry(self, rows: np.ndarray, new_segs: np.ndarray) -> None:
        """Move ``rows`` to ``new_segs``, whose first step is the last step of their old segment."""
        old = self.seg[rows]
        for arr in self.arrays():
            arr[new_segs, 0] = arr[old, self.horizon]
        self.seg[rows] = new_segs
        self.ptr[rows] = 1

    def finish(self, rows: np.ndarray) -> None:
        """``rows`` filled their segments: mark them full, give the rows fresh ones while any are free."""
        self.full[self.seg[rows]] = True
        k = min(len(self.free), len(rows))
        if k:
            take, self.free = self.free[:k], self.free[k:]
            self.carry(rows[:k], np.asarray(take))
        self.waiting = np.concatenate([self.waiting, rows[k:]])

    def ready(self) -> bool:
        return len(self.waiting) > 0 or int(self.full.sum()) >= self.rows

    def release(self, segs: np.ndarray) -> None:
        """Trained segments become free; rows waiting for one continue in them."""
        self.full[segs] = False
        self.free.extend(int(s) for s in segs)
        if len(self.waiting):
            waiting, self.waiting = self.waiting, np.zeros(0, dtype=np.int64)
            take, self.free = self.free[:len(waiting)], self.free[len(waiting):]
            self.carry(waiting, np.asarray(take))


def gae(rewards: torch.Tensor, values: torch.Tensor, starts: torch.Tensor, gamma: float,
        lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """GAE along dim 1 of ``(segments, horizon + 1)`` tensors; ``(advantages, returns)``, ``horizon`` wide.

    ``starts[:, t + 1]`` (an episode starts at the next obs) cuts the bootstrap. Runs on the tensors' device.
    """
    steps = values.shape[1] - 1
    nonterminal = 1.0 - starts[:, 1:].float()
    adv = torch.zeros(len(values), steps, device=values.device)
    last = torch.zeros(len(values), device=values.device)
    for t in reversed(range(steps)):
        delta = rewards[:, t] + gamma * values[:, t + 1] * nonterminal[:, t] - values[:, t]
        last = delta + gamma * lam * nonterminal[:, t] * last
        adv[:, t] = last
    return adv, adv + values[:, :steps]


@dataclass
class TrainResult:
    """What a finished (or stopped) run reports."""

    env: str
    run_dir: str | None
    global_step: int
    updates: int
    wall_time: float
    sps: float
    episode_return: float | None  # mean over the last ``solve_window`` episodes
    solved_return: float | None
    solved_at_step: int | None
    solved_at_time: float | None
    checkpoint: str | None
    interrupted: bool = False
    history: list[dict] = field(default_factory=list, repr=False)

    def summary(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "history"}


class Trainer:
    """PPO on one env. ``train_steps(n)`` trains; ``save_checkpoint``/``load_checkpoint`` persist.

    ``callbacks`` receive each update's metrics dict (the dashboard and metric writers).
    """

    def __init__(self, env: str | EnvSpec, config: dict, run_dir: str | os.PathLike | None = None,
                 callbacks: list[Callable[[dict], None]] | None = None):
        import pufferbox.vector

        self.spec = get_registry().get(env) if isinstance(env, str) else env
        self.config = config
        self.run_dir = None if run_dir is None else os.fspath(run_dir)
        self.callbacks = list(callbacks or [])
        tc, vc, pc = config["train"], config["vec"], config["policy"]
        self.tc = tc
        self.device = pick_device(tc["device"])
        threads = tc["torch_threads"] or 1  # small models on few cores: extra threads only spin
        torch.set_num_threads(threads)
        if tc["deterministic"]:
            torch.use_deterministic_algorithms(True)
        torch.manual_seed(tc["seed"])
        self.generator = torch.Generator().manual_seed(tc["seed"])  # minibatch shuffles

        backend_kwargs: dict[str, Any] = {}
        if vc["num_workers"]:
            backend_kwargs["num_workers"] = vc["num_workers"]
        if vc["batch_size"]:
            backend_kwargs["batch_size"] = vc["batch_size"]
        if vc.get("main_envs"):  # absent from configs saved before the option existed
            backend_kwargs["main_envs"] = vc["main_envs"]
        if vc["backend"] in ("multiprocessing", "ray"):  # the backends with workers to wait for
            backend_kwargs["step_timeout"] = vc.get("step_timeout", 60.0)
        # The cuda backend's recv() returns tensors on its device: rollout, sampling and update stay there.
        self.on_device = vc["backend"] == "cuda"
        if self.on_device:
            backend_kwargs.update(device=vc.get("device", "gpu"), seed=int(tc["seed"]) * 1_000_003,
                                  episode_slots=max(DEFAULT_EPISODE_SLOTS, tc["num_steps"] // 4))
        elif vc.get("device", "gpu") != "gpu":
            raise ConfigError(f"vec.device={vc['device']!r} only applies to --backend cuda (where the kernels run); "
                              f"drop it or add --backend cuda")
        self.venv = pufferbox.vector.make(self.spec, backend=vc["backend"], num_envs=vc["num_envs"],
                                          env_kwargs=dict(config.get("env", {})), native=vc["native"],
                                          check_obs=vc.get("check_obs", False), **backend_kwargs)
        self.obs_spec, self.act_spec = self.venv.obs_spec, self.venv.act_spec
        self.agents_per_env = self.venv.agents_per_env
        self.num_rows = self.venv.num_agents
        if self.on_device:
            if tc["device"] not in ("cpu", "auto") and torch.device(tc["device"]) != self.venv.device:
                raise ConfigError(f"train.device={tc['device']!r}: with --backend cuda the policy trains where the "
                                  f"kernels run ({self.venv.device}); drop --device")
            self.device = torch.device(self.venv.device)

        self.agent = build_agent(self.obs_spec, self.act_spec, pc, self.spec.load_policy()).to(self.device)
        # --compile: compile the two entry points (compiling the module would only cover forward()).
        self.act_fn = torch.compile(self.agent.act) if tc["compile"] else self.agent.act
        self.evaluate_fn = torch.compile(self.agent.evaluate) if tc["compile"] else self.agent.evaluate
        self.optimizer = Adam(self.agent.parameters(), lr=tc["learning_rate"], eps=1e-5)

        self.num_steps = tc["num_steps"]
        if self.num_steps < 1:
            raise ConfigError("train.num_steps: must be at least 1")
        pool = self.venv.batch_envs != self.venv.num_envs  # rows can run ahead: spare segments
        if self.on_device:
            self.rollout: Rollout | DeviceRollout = DeviceRollout(self.venv, self.agent, self.num_steps)
        else:
            self.rollout = Rollout(self.num_rows, self.num_rows * (2 if pool else 1), self.num_steps,
                                   (self.obs_spec.flat_size,),
                                   self.obs_spec.flat_dtype, self.act_spec.shape, self.act_spec.dtype,
                                   self.agent.lstm_size)
        self.state = self.agent.initial_state(self.num_rows)  # live LSTM state per row (CPU)
        self.all_env_ids, self.all_rows = np.arange(self.venv.num_envs), np.arange(self.num_rows)
        self.first = np.ones(self.num_rows, dtype=bool)  # next obs of this row starts an episode
        space = self.act_spec.flat_space
        self.action_bounds = (space.low, space.high) if not self.act_spec.discrete else None

        self.global_step = 0
        self.update = 0
        self.batch_per_update = self.num_rows * self.num_steps
        self.total_updates = max(1, math.ceil(tc["total_steps"] / self.batch_per_update))
        self.recent_returns: collections.deque = collections.deque(maxlen=tc["solve_window"])
        self.recent_lengths: collections.deque = collections.deque(maxlen=tc["solve_window"])
        self.new_episodes: list[tuple[float, float]] = []
        self.rollout_metrics: dict[str, float] = {}  # device rollouts: e.g. Tag's tag_rate
        self.solved_return = self.spec.solved_return
        self.solved_at_step: int | None = None
        self.solved_at_time: float | None = None
        self.phase_time = {"env": 0.0, "inference": 0.0, "learn": 0.0}
        self.elapsed_before = 0.0  # wall time of earlier sessions of a resumed run
        self.start_time = time.perf_counter()
        self.last_checkpoint: str | None = None
        self.stop_requested = False
        self.history: list[dict] = []
        self.pending_actions: np.ndarray | None = None
        self.reset_envs()

    # -- environment interaction --------------------------------------------------------
    def env_seed(self) -> int:
        """Envs are (re-)seeded from the run seed and the update count, so resumes replay exactly.

        Kernel envs (``--backend cuda``) are seeded once, when built; their reset is a no-op, so they
        continue where they were (a resumed cuda run does not replay exactly).
        """
        return int(self.tc["seed"]) * 1_000_003 + self.update * self.venv.num_envs

    def reset_envs(self) -> None:
        self.venv.async_reset(self.env_seed())
        self.rollout.clear()
        self.first[:] = True
        self.state = self.agent.initial_state(self.num_rows)
        self.pending_actions = None

    def collect(self) -> np.ndarray:
        """Step the envs until ``num_rows`` segments are full (or a row has nowhere to write); returns them."""
        if self.on_device:
            infos, self.rollout_metrics = self.rollout.collect(self.phase_time)
            episodes = episodes_from_infos(infos)
            self.new_episodes += zip(episodes.returns.tolist(), episodes.lengths.tolist())
            return self.all_rows
        ro, apE = self.rollout, self.agents_per_env
        while True:
            t0 = time.perf_counter()
            if self.pending_actions is not None:
                self.venv.send(self.pending_actions)
            obs, rewards, terminals, truncations, infos, env_ids, masks = self.venv.recv()
            t1 = time.perf_counter()
            self.phase_time["env"] += t1 - t0
            if len(env_ids) == len(self.all_env_ids) and np.array_equal(env_ids, self.all_env_ids):
                rows = self.all_rows
            else:
                rows = (np.asarray(env_ids)[:, None] * apE + np.arange(apE)).reshape(-1)
            seg, ptr = ro.seg[rows], ro.ptr[rows]
            has_prev = ptr > 0  # the reward belongs to the transition stored one slot back
            ro.np_rewards[seg[has_prev], ptr[has_prev] - 1] = rewards[has_prev]
            starts = np.logical_or(terminals, truncations) | self.first[rows]
            self.first[rows] = False
            if len(infos):
                episodes = episodes_from_infos(infos)
                self.new_episodes += zip(episodes.returns.tolist(), episodes.lengths.tolist())
            ro.np_obs[seg, ptr] = obs
            ro.np_starts[seg, ptr] = starts
            ro.np_masks[seg, ptr] = masks

            obs_t = torch.from_numpy(obs).to(self.device)
            state = None
            if self.state is not None:
                state = (self.state[0][rows], self.state[1][rows])
                ro.np_h[seg, ptr], ro.np_c[seg, ptr] = state[0].numpy(), state[1].numpy()
                state = (state[0].to(self.device), state[1].to(self.device))
            with torch.no_grad():
                action, logprob, _, value, new_state = self.act_fn(
                    obs_t, state, torch.from_numpy(starts).to(self.device))
            if new_state is not None:
                self.state[0][rows], self.state[1][rows] = new_state[0].cpu(), new_state[1].cpu()
            action = action.cpu().numpy()
            ro.np_actions[seg, ptr] = action
            ro.np_logprobs[seg, ptr] = logprob.cpu().numpy()
            ro.np_values[seg, ptr] = value.cpu().numpy()
            ro.ptr[rows] = ptr + 1
            if self.action_bounds is not None:  # sample unclipped, step clipped
                action = np.clip(action, *self.action_bounds)
            self.pending_actions = action
            self.phase_time["inference"] += time.perf_counter() - t1

            done_rows = rows[ptr + 1 == self.num_steps + 1]
            if len(done_rows):
                ro.finish(done_rows)
                if ro.ready():
                    return np.nonzero(ro.full)[0]

    # -- learning ------------------------------------------------------------------------
    def advantages(self, segs: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """GAE along each segment's own time axis (one row's consecutive steps)."""
        seg = self.rollout.take(segs)
        return gae(seg["rewards"], seg["values"], seg["starts"], self.tc["gamma"], self.tc["gae_lambda"])

    def learn(self, segs: np.ndarray) -> dict:
        """PPO epochs over full segments; padded rows (mask False) weigh zero in every loss."""
        tc, dev, steps = self.tc, self.device, self.num_steps
        if tc["anneal_lr"]:
            frac = max(0.0, 1.0 - self.update / self.total_updates)
            self.optimizer.param_groups[0]["lr"] = frac * tc["learning_rate"]
        seg = self.rollout.take(segs)  # on the rollout's device: the CPU, or the kernels' device
        adv, returns = gae(seg["rewards"], seg["values"], seg["starts"], tc["gamma"], tc["gae_lambda"])
        # contiguous once here, so each minibatch's reshape below is a view, not a copy of everything
        obs, actions, logprobs, values, masks, starts = (seg[name][:, :steps].to(dev).contiguous() for name in
                                                         ("obs", "actions", "logprobs", "values", "masks", "starts"))
        adv, returns = adv.to(dev), returns.to(dev)

        recurrent = self.agent.lstm is not None
        if recurrent:  # minibatches of whole rows, time-major for the unroll
            units = torch.arange(len(segs))
            h0, c0 = seg["h"][:, 0].to(dev), seg["c"][:, 0].to(dev)
        else:  # minibatches of single live transitions
            units = masks.reshape(-1).nonzero().squeeze(-1).cpu()
        n_units = len(units)
        if n_units == 0:
            return {}
        mb_size = max(1, n_units // tc["num_minibatches"])
        stats = collections.defaultdict(list)
        for _epoch in range(tc["update_epochs"]):
            order = units[torch.randperm(n_units, generator=self.generator)].to(dev)  # one copy per epoch
            for start in range(0, n_units - mb_size + 1, mb_size):
                idx = order[start:start + mb_size]
                if recurrent:
                    sl = lambda x: x[idx].transpose(0, 1)  # noqa: E731  (rows, T, ...) -> (T, rows, ...)
                    new_logprob, entropy, new_value = self.evaluate_fn(
                        sl(obs), sl(actions), (h0[idx], c0[idx]), sl(starts))
                    mb = [sl(x).reshape(-1) for x in (logprobs, values, adv, returns)]
                    weight = sl(masks).reshape(-1).float()
                else:
                    flat = lambda x: x.reshape(-1, *x.shape[2:])[idx]  # noqa: E731
                    new_logprob, entropy, new_value = self.evaluate_fn(flat(obs), flat(actions))
                    mb = [flat(x) for x in (logprobs, values, adv, returns)]
                    weight = torch.ones_like(mb[0])
                old_logprob, old_value, mb_adv, mb_ret = mb
                self.ppo_step(new_logprob, entropy, new_value, old_logprob, old_value, mb_adv, mb_ret, weight, stats)
            if tc["target_kl"] and float(torch.stack(stats["approx_kl"][-max(1, tc["num_minibatches"]):]).mean()) \
                    > tc["target_kl"]:
                break

        live = masks.reshape(-1)
        y_pred, y_true = values.reshape(-1)[live], returns.reshape(-1)[live]
        var_y = torch.var(y_true) if len(y_true) > 1 else torch.tensor(0.0)
        explained = float("nan") if var_y == 0 else float(1 - torch.var(y_true - y_pred) / var_y)
        # statistics stayed on the device during the epochs: one read each, here
        out = {k: float(torch.stack(v).double().mean()) for k, v in stats.items()}
        out.update(explained_variance=explained, learning_rate=self.optimizer.param_groups[0]["lr"])
        return out

    def ppo_step(self, new_logprob, entropy, new_value, old_logprob, old_value, adv, ret, weight, stats) -> None:
        """One gradient step of the clipped PPO objective on a minibatch (weighted means)."""
        tc = self.tc
        total = weight.sum().clamp(min=1.0)
        wmean = lambda x: (x * weight).sum() / total  # noqa: E731
        logratio = new_logprob - old_logprob
        ratio = logratio.exp()
        with torch.no_grad():  # statistics stay tensors (no device sync per minibatch)
            stats["approx_kl"].append(wmean((ratio - 1) - logratio))
            stats["clipfrac"].append(wmean(((ratio - 1.0).abs() > tc["clip_coef"]).float()))
        if tc["norm_adv"]:  # a lone live transition has no spread: keep it as is (torch.where: no sync)
            mean = wmean(adv)
            std = (wmean((adv - mean) ** 2) * total / (total - 1).clamp(min=1e-8)).sqrt()
            adv = torch.where(total > 1, (adv - mean) / (std + 1e-8), adv)
        pg_loss = wmean(torch.max(-adv * ratio, -adv * ratio.clamp(1 - tc["clip_coef"], 1 + tc["clip_coef"])))
        if tc["clip_vloss"]:
            v_clipped = old_value + (new_value - old_value).clamp(-tc["clip_coef"], tc["clip_coef"])
            v_loss = 0.5 * wmean(torch.max((new_value - ret) ** 2, (v_clipped - ret) ** 2))
        else:
            v_loss = 0.5 * wmean((new_value - ret) ** 2)
        entropy_loss = wmean(entropy)
        loss = pg_loss - tc["ent_coef"] * entropy_loss + tc["vf_coef"] * v_loss
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(self.agent.parameters(), tc["max_grad_norm"])
        self.optimizer.step()
        stats["policy_loss"].append(pg_loss.detach())
        stats["value_loss"].append(v_loss.detach())
        stats["entropy"].append(entropy_loss.detach())

    # -- the outer loop ------------------------------------------------------------------
    def wall_time(self) -> float:
        return self.elapsed_before + time.perf_counter() - self.start_time

    def train_update(self) -> dict:
        """One rollout + one PPO update; returns the update's metrics (also sent to callbacks)."""
        segs = self.collect()
        t0 = time.perf_counter()
        losses = self.learn(segs)
        self.rollout.release(segs)
        self.phase_time["learn"] += time.perf_counter() - t0
        self.update += 1
        self.global_step += len(segs) * self.num_steps
        metrics = self.record(losses)
        if self.tc["checkpoint_interval"] and self.update % self.tc["checkpoint_interval"] == 0:
            if self.run_dir is not None:
                self.save_checkpoint()
            self.reset_envs()
        return metrics

    def record(self, losses: dict) -> dict:
        for ret, length in self.new_episodes:
            self.recent_returns.append(ret)
            self.recent_lengths.append(length)
        episodes = self.new_episodes
        self.new_episodes = []
        wall = self.wall_time()
        mean_recent = float(np.mean(self.recent_returns)) if self.recent_returns else None
        if (self.solved_at_step is None and self.solved_return is not None and mean_recent is not None
                and len(self.recent_returns) == self.recent_returns.maxlen and mean_recent >= self.solved_return):
            self.solved_at_step, self.solved_at_time = self.global_step, wall
        metrics = {
            "global_step": self.global_step,
            "update": self.update,
            "wall_time": round(wall, 4),
            "sps": round(self.global_step / max(wall, 1e-9), 1),
            "episode_return": float(np.mean([e[0] for e in episodes])) if episodes else None,
            "episode_length": float(np.mean([e[1] for e in episodes])) if episodes else None,
            "episodes": len(episodes),
            "return_recent": mean_recent,
            "solved": self.solved_at_step is not None,
            **self.rollout_metrics,
            **losses,
            **{f"time_{k}": round(v, 4) for k, v in self.phase_time.items()},
        }
        self.history.append(metrics)
        for callback in self.callbacks:
            callback(metrics)
        return metrics

    def should_stop(self) -> bool:
        if self.stop_requested or self.global_step >= self.tc["total_steps"]:
            return True
        return bool(self.tc["stop_on_solve"] and self.solved_at_step is not None)

    def train_steps(self, n: int) -> list[dict]:
        """Train at least ``n`` more steps (whole updates); returns their metrics."""
        target, out = self.global_step + n, []
        while self.global_step < target and not self.stop_requested:
            out.append(self.train_update())
        return out

    def train(self) -> TrainResult:
        """Train until ``total_steps``, a stop request (Ctrl-C) or, with ``stop_on_solve``, solved."""
        while not self.should_stop():
            self.train_update()
        if self.run_dir is not None:
            self.save_checkpoint()
        return self.result()

    def result(self) -> TrainResult:
        wall = self.wall_time()
        return TrainResult(
            env=self.spec.name, run_dir=self.run_dir, global_step=self.global_step, updates=self.update,
            wall_time=wall, sps=self.global_step / max(wall, 1e-9),
            episode_return=float(np.mean(self.recent_returns)) if self.recent_returns else None,
            solved_return=self.solved_return, solved_at_step=self.solved_at_step, solved_at_time=self.solved_at_time,
            checkpoint=self.last_checkpoint, interrupted=self.stop_requested, history=self.history)

    # -- checkpoints ---------------------------------------------------------------------
    def checkpoint_state(self) -> dict:
        return {
            "format": CHECKPOINT_FORMAT,
            "env": self.spec.name,
            "config": tomli_w.dumps(self.config),
            "model": self.agent.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "global_step": self.global_step,
            "update": self.update,
            "wall_time": self.wall_time(),
            "torch_rng": torch.get_rng_state(),
            "shuffle_rng": self.generator.get_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "recent_returns": torch.tensor(list(self.recent_returns), dtype=torch.float64),
            "recent_lengths": torch.tensor(list(self.recent_lengths), dtype=torch.float64),
            "solved_at_step": -1 if self.solved_at_step is None else self.solved_at_step,
            "solved_at_time": -1.0 if self.solved_at_time is None else self.solved_at_time,
        }

    def save_checkpoint(self, directory: str | os.PathLike | None = None) -> str:
        """Write a checkpoint into ``directory`` (default ``RUN_DIR/checkpoints``); keeps the last K."""
        if directory is None:
            if self.run_dir is None:
                raise ValueError("save_checkpoint needs a directory when the trainer has no run_dir")
            directory = os.path.join(self.run_dir, "checkpoints")
        path = save_checkpoint(self.checkpoint_state(), directory, self.update, keep=self.tc["keep_checkpoints"])
        self.last_checkpoint = str(path)
        return self.last_checkpoint

    def load_checkpoint(self, path: str | os.PathLike) -> None:
        """Restore model, optimizer, counters and RNG states; envs are re-seeded as at that update."""
        state = load_checkpoint(path, map_location=self.device)
        if state.get("env") != self.spec.name:
            raise ConfigError(f"checkpoint {path} is for env {state.get('env')!r}, not {self.spec.name!r}")
        self.agent.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.global_step, self.update = int(state["global_step"]), int(state["update"])
        self.elapsed_before = float(state["wall_time"])
        self.start_time = time.perf_counter()
        torch.set_rng_state(state["torch_rng"].cpu())
        self.generator.set_state(state["shuffle_rng"].cpu())
        if state["cuda_rng"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
        self.recent_returns.clear()
        self.recent_returns.extend(state["recent_returns"].tolist())
        self.recent_lengths.clear()
        self.recent_lengths.extend(state["recent_lengths"].tolist())
        solved = int(state["solved_at_step"])
        self.solved_at_step = None if solved < 0 else solved
        self.solved_at_time = None if solved < 0 else float(state["solved_at_time"])
        self.reset_envs()

    def close(self) -> None:
        self.venv.close()
