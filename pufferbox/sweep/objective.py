"""What a sweep optimizes, computed from a training run's result or its metrics so far.

* ``steps`` (default when the env has a ``solved_return``; minimized): the agent steps until
  the recent mean return reached ``solved_return``. A trial that never gets there scores
  ``budget * (1 + shortfall)``, where ``shortfall`` in [0, 1] is how far its final recent
  return stayed below the threshold (relative to it), so every solved trial beats every
  unsolved one and unsolved ones rank by how close they came.
* ``return`` (default otherwise; maximized): the final recent mean return.
* ``return,steps`` / ``return,wall_time``: two objectives, return up and cost (agent steps or
  seconds spent) down; the sweep also searches ``train.total_steps`` between an eighth of the
  budget and the budget, and reports the Pareto front.

Example:
    >>> solve_cost(solved_at=None, budget=1000, recent=50.0, solved_return=100.0)
    1500.0
    >>> solve_cost(solved_at=640, budget=1000, recent=100.0, solved_return=100.0)
    640.0
"""

from __future__ import annotations

from dataclasses import dataclass

from pufferbox.train.config import ConfigError

__all__ = ["Objective", "parse_objective", "solve_cost"]

COSTS = ("steps", "wall_time")


def solve_cost(solved_at: float | None, budget: float, recent: float | None, solved_return: float) -> float:
    if solved_at is not None:
        return float(solved_at)
    if recent is None:
        return 2.0 * budget
    shortfall = (solved_return - recent) / max(abs(solved_return), 1e-9)
    return float(budget * (1 + min(1.0, max(0.0, shortfall))))


@dataclass(frozen=True)
class Objective:
    """``names`` in order (e.g. ``("return", "steps")``) and the env's threshold, if any."""

    names: tuple[str, ...]
    solved_return: float | None

    @property
    def multi(self) -> bool:
        return len(self.names) > 1

    @property
    def target(self) -> float:
        """The solved return a ``steps`` objective aims at (parse_objective refuses ``steps`` without one)."""
        if self.solved_return is None:
            raise ValueError("a steps objective needs the env's solved_return")
        return self.solved_return

    @property
    def directions(self) -> list[str]:
        return ["maximize" if n == "return" else "minimize" for n in self.names]

    def values(self, result: dict, budget: int) -> list[float]:
        """The objective values of a finished run (``result``: a TrainResult's summary fields)."""
        out = []
        for name in self.names:
            if name == "return":
                out.append(float("-inf") if result["episode_return"] is None else float(result["episode_return"]))
            elif self.multi:  # a cost: what the trial spent
                out.append(float(result["global_step" if name == "steps" else "wall_time"]))
            else:
                out.append(solve_cost(result["solved_at_step"], budget, result["episode_return"], self.target))
        return out

    def intermediate(self, metrics: dict, budget: int, solved_at: int | None) -> float | None:
        """The single objective as if the run ended now (for pruning); ``None`` before any episode."""
        recent = metrics.get("return_recent")
        if recent is None:
            return None
        if self.names[0] == "return":
            return float(recent)
        return solve_cost(solved_at, budget, recent, self.target)


def parse_objective(text: str | None, solved_return: float | None, env: str) -> Objective:
    """``None`` → the default; ``"return,steps"`` → two objectives. One-line errors name the fix."""
    if text is None:
        return Objective(("steps",) if solved_return is not None else ("return",), solved_return)
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    choices = "steps, return, return,steps or return,wall_time"
    if len(names) == 1 and names[0] in ("steps", "return"):
        if names[0] == "steps" and solved_return is None:
            raise ConfigError(f"--objective steps: {env} has no solved_return; use --objective return")
        return Objective(names, solved_return)
    if len(names) == 2 and names[0] == "return" and names[1] in COSTS:
        return Objective(names, solved_return)
    raise ConfigError(f"--objective {text}: unknown objective; choose {choices}")
