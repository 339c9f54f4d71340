"""Evaluate a checkpoint: mean/std episode return, optional ANSI rendering or a GIF/MP4.

Example:
    >>> evaluate("cartpole", "runs/cartpole-20250101-000000", episodes=5)  # doctest: +SKIP
    {'env': 'cartpole', 'episodes': 5, 'mean_return': 500.0, 'std_return': 0.0, ...}
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch

from pufferbox.envargs import check_env_kwargs
from pufferbox.registry import get_registry
from pufferbox.train.checkpoint import CheckpointError, check_encoder_is_trusted, load_checkpoint
from pufferbox.train.collector import HostCollector
from pufferbox.train.config import ConfigError, RunConfig, TrainConfig, parse_override
from pufferbox.train.hardware import auto_threads, policy_macs, usable_cores
from pufferbox.train.normalize import make_normalizer
from pufferbox.train.policies import build_agent

__all__ = ["evaluate", "parse_env_overrides"]


def parse_env_overrides(texts: Any) -> dict[str, Any]:
    """``eval --set`` texts as env keyword arguments: only the ``env`` section, since the policy and its
    training settings come from the checkpoint.

    Example:
        >>> parse_env_overrides(["env.bot_share=100", "env.mode=hard"])
        {'bot_share': 100, 'mode': 'hard'}
    """
    out: dict[str, Any] = {}
    for text in texts:
        ((section, values),) = parse_override(text).items()
        if section != "env":
            raise ConfigError(
                f"--set {text}: eval takes env.KEY=VALUE only (the game's settings); the rest is the checkpoint's"
            )
        out.update(values)
    return out


def evaluate(
    env: str | None,
    checkpoint: str | Path,
    episodes: int = 10,
    render: bool = False,
    video: str | Path | None = None,
    deterministic: bool = False,
    seed: int = 12345,
    num_envs: int = 8,
    stream: TextIO | None = None,
    encoder: str | None = None,
    env_overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run ``episodes`` episodes with the checkpoint's policy; returns a JSON-ready dict (with the mean of
    each episode metric the env reports under ``metrics``).

    ``render`` prints ANSI frames (text envs such as NetHack) to ``stream``; ``video``
    (``.gif`` or ``.mp4``) saves the first episode's ``rgb_array`` frames. ``encoder``: the user's
    ``module:attr`` for a checkpoint whose encoder no installed plugin registers. ``env_overrides``:
    env keyword arguments that replace the run's (a game setting to be judged under).
    """
    import pufferbox.vector

    if episodes < 1:
        raise ConfigError(f"--episodes: must be at least 1, got {episodes}")
    state, spec, config = trained_run(env, checkpoint, encoder)
    env_kwargs = {**config.env, **(env_overrides or {})}
    check_env_kwargs(spec, env_kwargs, native=config.vec.native)  # a checkpoint's [env] is checked as a run's
    visual = render or video is not None
    render_mode = None
    if visual:
        render_mode = env_kwargs["render_mode"] = choose_render_mode(spec, env_kwargs, render, video is not None)
        num_envs = 1
    venv = pufferbox.vector.make(
        spec,
        backend="serial",
        num_envs=min(num_envs, episodes),
        env_kwargs=env_kwargs,
        native=config.vec.native and not visual,
    )
    try:
        check_same_spaces(spec, venv, dict(config.env), env_overrides or {}, native=config.vec.native and not visual)
        agent = checkpoint_agent(spec, venv, config, state, str(checkpoint))
    except BaseException:
        venv.close()
        raise
    threads = config.train.torch_threads
    torch.set_num_threads(threads or auto_threads(usable_cores(), "serial", 0, policy_macs(agent, venv.obs_spec)))
    torch.manual_seed(seed)
    show = Frames(venv, render_mode, stream or sys.stdout)
    try:
        collector = HostCollector(venv, agent, horizon=1)
        collector.norm = frozen_normalizer(venv, config.train, state, str(checkpoint))
        collector.reset(seed)
        ended = collector.play(episodes, greedy=deterministic, on_step=show if visual else None)
    finally:
        venv.close()
    returns, lengths = ended.returns.tolist(), ended.lengths.astype(np.float64).tolist()
    returns, lengths = returns[:episodes], lengths[:episodes]
    result = {
        "env": spec.name,
        "checkpoint": str(checkpoint),
        "episodes": len(returns),
        "mean_return": float(np.mean(returns)),
        "std_return": float(np.std(returns)),
        "mean_length": float(np.mean(lengths)),
        "returns": returns,
        "lengths": [int(n) for n in lengths],
        "metrics": {name: float(np.mean(values[:episodes])) for name, values in ended.metrics.items()},
    }
    if video is not None:
        result["video"] = save_video(show.frames, Path(video))
    return result


def trained_run(env: str | None, checkpoint: str | Path, encoder: str | None) -> tuple[dict, Any, RunConfig]:
    """The checkpoint's state, the env spec it trained on (``env`` must name the same) and its run config."""
    state = load_checkpoint(checkpoint)
    env_name = state.get("env")
    if env is not None and env_name is not None and get_registry().get(env).name != env_name:
        raise ConfigError(f"{checkpoint}: checkpoint was trained on {env_name!r}, not {env!r}")
    if not (env or env_name):
        raise ConfigError(f"{checkpoint}: the checkpoint names no env; pass the env: pufferbox eval ENV --checkpoint ...")
    spec = get_registry().get_trained(str(env or env_name), state.get("distribution"))  # the env it trained on
    config = RunConfig.from_toml(state["config"])
    check_encoder_is_trusted(config.policy.encoder, str(checkpoint), explicit=encoder)
    return state, spec, config


def check_same_spaces(spec: Any, venv: Any, trained: dict, overrides: dict, native: bool) -> None:
    """Refuses ``eval --set`` settings under which the game's spaces differ from the run's: the checkpoint's
    policy was built for those (nothing to check without settings)."""
    import pufferbox.vector

    if not overrides:
        return
    base = pufferbox.vector.make(spec, backend="serial", num_envs=1, env_kwargs=trained, native=native)
    try:
        same = (base.obs_spec.space, base.act_spec.space) == (venv.obs_spec.space, venv.act_spec.space)
    finally:
        base.close()
    if not same:
        changed = " ".join(f"env.{key}={value!r}" for key, value in overrides.items())
        raise ConfigError(
            f"--set {changed}: the game's spaces change with it ({base.obs_spec.space} -> {venv.obs_spec.space}, "
            f"{base.act_spec.space} -> {venv.act_spec.space}), and the checkpoint's policy was built for the run's; "
            "fix: a setting that keeps them, or train with it"
        )


class Frames:
    """``on_step`` of an evaluation that shows the env: ANSI frames printed as they come, or the first
    episode's ``rgb_array`` frames kept for a video (the rest play unrendered: GIFs of 10 games take minutes)."""

    def __init__(self, venv: Any, render_mode: str | None, out: TextIO):
        self.venv, self.render_mode, self.out = venv, render_mode, out
        self.frames: list[Any] = []  # numpy images, as imageio takes them
        self.recording = True

    def __call__(self, finished: Any) -> None:
        if self.render_mode == "ansi":
            print(self.venv.render(), file=self.out, flush=True)
            return
        self.recording = self.recording and not len(finished)  # after the end, the frame is the next game's start
        frame = self.venv.render() if self.recording else None
        if frame is not None:
            self.frames.append(np.asarray(frame))


def choose_render_mode(spec: Any, env_kwargs: dict[str, Any], render: bool, video: bool) -> str | None:
    """``"ansi"`` for ``--render`` (text envs), ``"rgb_array"`` for ``--video``; one line of error without them."""
    modes = spec.make_raw(**env_kwargs).metadata.get("render_modes", [])
    if video:
        if "rgb_array" not in modes:
            raise ConfigError(f"{spec.name}: --video needs rgb_array rendering (render modes: {modes or 'none'})")
        return "rgb_array"
    if render and "ansi" not in modes:
        raise ConfigError(
            f"{spec.name}: no ANSI rendering (render modes: {modes or 'none'}); use --video out.gif for rgb_array envs"
        )
    return "ansi"


def checkpoint_agent(spec: Any, venv: Any, config: RunConfig, state: dict[str, Any], checkpoint: str) -> Any:
    """The checkpoint's policy in eval mode: one agent, or one per agent group on its own slots; weights that
    do not fit the policy its config describes (a tampered or mixed-up file) are one :class:`CheckpointError`."""
    try:
        if "groups" in state:
            from pufferbox.group_layout import checkpoint_layout
            from pufferbox.train.league import build_match_agent

            layout = checkpoint_layout(spec, dict(config.env), state, checkpoint)
            return build_match_agent(spec, venv, config, layout, "", state, state)
        agent = build_agent(venv.obs_spec, venv.act_spec, config.policy, spec.load_policy())
        agent.load_state_dict(state["model"])
    except (RuntimeError, KeyError, TypeError) as exc:  # load_state_dict: missing, unexpected, mis-shaped tensors
        raise weights_mismatch(checkpoint, exc) from None
    agent.eval()
    return agent


def weights_mismatch(checkpoint: str, exc: BaseException) -> CheckpointError:
    """One line for weights that do not fit their config: torch's first detail (the tensor and its shapes)."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    detail = (lines[1] if len(lines) > 1 and lines[0].startswith("Error(s) in loading") else lines[0]) if lines else ""
    detail = detail if len(detail) <= 300 else detail[:300] + "..."
    return CheckpointError(
        f"{checkpoint}: its weights do not fit the policy its config describes ({type(exc).__name__}: {detail}); "
        "the file was changed or mixed up: export or train it again"
    )


def frozen_normalizer(venv: Any, train: TrainConfig, state: dict, checkpoint: str = "checkpoint") -> Any:
    """The normalizer the run trained with, its statistics as the checkpoint saved them, no longer updated."""
    norm = make_normalizer(venv.obs_spec, venv.num_agents, train)
    if norm is not None:
        try:
            norm.load_state_dict(state.get("normalizer", {}))
        except (RuntimeError, KeyError, TypeError) as exc:
            raise weights_mismatch(checkpoint, exc) from None
        norm.frozen = True
    return norm


def save_video(frames: list[Any], path: Path, fps: int = 30) -> str:
    import imageio.v2 as imageio

    if not frames:
        raise ConfigError(f"{path}: the env produced no rgb_array frames")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".gif":
        imageio.mimsave(path, frames, duration=1.0 / fps, loop=0)
    elif path.suffix.lower() == ".mp4":
        try:
            imageio.mimsave(path, frames, fps=fps)
        except Exception as exc:  # needs imageio-ffmpeg
            raise ConfigError(f"{path}: cannot write MP4 here ({exc}); use a .gif path") from None
    else:
        raise ConfigError(f"{path}: video must end in .gif or .mp4")
    return str(path)
