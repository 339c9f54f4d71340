"""``pufferbox export RUN_DIR --to hub DIR``: a folder the Hugging Face Hub takes as a model repository.

It holds ``model.safetensors`` (the policy weights, the frozen observation statistics and, for grouped
runs, each group's slots; the env in its metadata), the run's ``config.toml``, a ``README.md`` model
card (YAML front matter: library, tags, the evaluation in ``model-index``; the env, pinned versions,
the training command), ``returns.png`` (the return curve of ``metrics.jsonl``) and ``replay.gif`` when
the env renders ``rgb_array``. ``pufferbox eval --checkpoint DIR`` plays it
(:func:`pufferbox.train.checkpoint.load_hub_folder`). Nothing is uploaded: that is the user's
``huggingface-cli upload USER/REPO DIR``.
"""

from __future__ import annotations

import errno
import json
import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch

from pufferbox.export.policy import LoadedRun
from pufferbox.train.checkpoint import HUB_FORMAT, HUB_WEIGHTS

__all__ = ["write_hub", "hub_tensors"]

EVAL_EPISODES = 5
EVAL_SEED = 12345


def hub_tensors(state: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The checkpoint's tensors that playing needs, under flat names (``model.*``, ``normalizer.*``, ``groups.*``)."""
    out = {f"model.{k}": v for k, v in state["model"].items()}
    out |= {f"normalizer.{k}": v for k, v in state.get("normalizer", {}).items()}
    out |= {f"groups.{name}.slots": g["slots"] for name, g in state.get("groups", {}).items()}
    return {k: v.detach().cpu().contiguous() for k, v in out.items()}


def write_hub(run: LoadedRun, run_dir: Path, folder: Path, episodes: int = EVAL_EPISODES) -> dict[str, Any]:
    """Write the model folder into ``folder``; returns what it holds and the evaluation it reports."""
    from safetensors.torch import save_file

    from pufferbox.train.evaluate import evaluate

    meta = {"format": HUB_FORMAT, "env": run.spec.name, "distribution": str(run.state.get("distribution") or "")}
    meta["groups"] = json.dumps(list(run.state.get("groups", {})))  # safetensors sorts names; play keeps this order
    save_file(hub_tensors(run.state), str(folder / HUB_WEIGHTS), metadata=meta)
    (folder / "config.toml").write_text(run.state["config"])
    result = evaluate(
        None, folder, episodes=episodes, seed=EVAL_SEED, encoder=run.encoder
    )  # the folder itself, as users will load it
    curve = return_curve(run_dir, folder / "returns.png")
    gif, no_gif = replay_gif(run, folder, folder / "replay.gif")
    (folder / "README.md").write_text(model_card(run, result, curve, gif, no_gif))
    return {"files": sorted(p.name for p in folder.iterdir()), "mean_return": result["mean_return"], "episodes": episodes}


# Write errors that fail the export (the storage, not the renderer or the plot).
STORAGE_FAULTS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EIO)


def return_curve(run_dir: Path, path: Path) -> str | None:
    """``returns.png`` from the run's ``metrics.jsonl``; None (and why, in the card) when it has no returns."""
    from pufferbox.train.plot import plot_runs

    metrics = (run_dir if run_dir.is_dir() else run_dir.parent.parent) / "metrics.jsonl"
    if not metrics.is_file():
        return None
    try:
        plot_runs([metrics.parent], path)
    except OSError as exc:
        if exc.errno in STORAGE_FAULTS:
            raise
        return None
    except Exception:  # no episode finished yet: nothing to draw
        return None
    return path.name if path.is_file() else None


def replay_gif(run: LoadedRun, folder: Path, path: Path) -> tuple[str | None, str]:
    """One episode of the policy as a GIF: ``(file name, "")``, or ``(None, why not)``."""
    from pufferbox.train.evaluate import evaluate

    # Not closed: closing a pygame-drawn env quits pygame's font module for the rest of the process,
    # and the evaluation below builds the env again (`pufferbox eval --video` probes the same way).
    raw = run.spec.make_raw(**dict(run.config.env))
    modes = list(getattr(raw, "metadata", {}).get("render_modes", []))
    if "rgb_array" not in modes:
        return None, f"{run.spec.name} does not render rgb_array frames"
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # pygame-drawn envs: no display needed
    try:
        evaluate(None, folder, episodes=1, video=path, seed=EVAL_SEED, encoder=run.encoder)
    except Exception as exc:  # a renderer failing must not lose the rest of the model folder
        path.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno in STORAGE_FAULTS:
            raise  # the folder cannot be written: the export fails (a full disk must not publish half a folder)
        return None, f"rendering {run.spec.name} failed ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    return path.name, ""


def installed(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def pinned_versions(run: LoadedRun) -> dict[str, str]:
    """pufferbox, torch, the env's plugin and the packages the plugin needs, as installed when exported."""
    names = ["pufferbox", "torch"]
    if run.spec.meta.distribution:
        names.append(run.spec.meta.distribution)
    for requirement in run.spec.meta.requires.values():
        name = str(requirement).split(";")[0].split("[")[0]
        for sep in ("==", ">=", "<=", "~=", "!=", ">", "<"):
            name = name.split(sep)[0]
        names.append(name.strip())
    return {name: installed(name) for name in dict.fromkeys(names) if name}


def training_command(run: LoadedRun) -> str:
    return f"pufferbox train {run.spec.name} --config config.toml"


def front_matter(run: LoadedRun, result: dict[str, Any]) -> str:
    """YAML the Hub reads: library, tags and the evaluation as ``model-index`` (strings JSON-quoted: valid YAML)."""
    name = run.spec.name
    tags = ["reinforcement-learning", "deep-reinforcement-learning", "pufferbox", "ppo", name.replace("/", "-")]
    score = f"{result['mean_return']:.2f} +/- {result['std_return']:.2f}"
    q = json.dumps
    lines = ["---", "library_name: pufferbox", "tags:", *(f"- {q(t)}" for t in tags), "model-index:"]
    lines += [f"- name: {q('PPO-' + name)}", "  results:", "  - task:", "      type: reinforcement-learning"]
    lines += ["      name: reinforcement-learning", "    dataset:", f"      name: {q(name)}", f"      type: {q(name)}"]
    lines += ["    metrics:", "    - type: mean_reward", f"      value: {q(score)}", "      name: mean_reward"]
    lines += ["      verified: false", "---"]
    return "\n".join(lines)


def model_card(run: LoadedRun, result: dict[str, Any], curve: str | None, gif: str | None, no_gif: str) -> str:
    """README.md: front matter, then what the model is, how it scored, how it was trained, how to use it."""
    name, state = run.spec.name, run.state
    groups = ", ".join(p.name for p in run.policies) if len(run.policies) > 1 else None
    versions = "\n".join(f"| {dist} | {v} |" for dist, v in pinned_versions(run).items())
    curve_md = (
        f"![returns during training]({curve})"
        if curve
        else "No return curve: the run's metrics.jsonl has no finished episode."
    )
    gif_md = f"![one episode]({gif})" if gif else f"No GIF: {no_gif}."
    files = [(HUB_WEIGHTS, "policy weights (with frozen observation statistics and group slots), safetensors")]
    files += [("config.toml", "the run's whole configuration (env, train, policy, vec)")]
    files += [(curve, "return curve from metrics.jsonl")] if curve else []
    files += [(gif, "one evaluation episode")] if gif else []
    files_md = "\n".join(f"| `{f}` | {what} |" for f, what in files)
    return f"""{front_matter(run, result)}

# PPO agent for `{name}` (pufferbox)

A policy trained with pufferbox's PPO on `{name}` for {int(state.get("global_step", 0)):,} steps
(update {int(state.get("update", 0))}){f"; one policy per agent group: {groups}" if groups else ""}.

**Evaluation**: mean return {result["mean_return"]:.2f} +/- {result["std_return"]:.2f} over {result["episodes"]} episodes
(seed {EVAL_SEED}, sampled actions: `pufferbox eval --checkpoint . --episodes {result["episodes"]} --seed {EVAL_SEED}`).

{curve_md}

{gif_md}

## Files

| file | what |
|---|---|
{files_md}

## Use it

```bash
pip install pufferbox {run.spec.meta.distribution or ""}   # the versions below
pufferbox eval --checkpoint PATH_TO_THIS_FOLDER --episodes 10
pufferbox export PATH_TO_THIS_FOLDER --to onnx exported/    # ONNX graph + JSON layout, no pufferbox needed to run it
```

## Training

```bash
{training_command(run)}
```

## Versions

| package | version |
|---|---|
{versions}

## Upload

Written by `pufferbox export RUN_DIR --to hub DIR`, which never touches the network; upload with
`huggingface-cli upload USER/REPO DIR .` (or `hf upload USER/REPO DIR .`).
"""
