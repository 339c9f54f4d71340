"""What a C game's Python side declares: its registration record and the base of its reference env.

A C game is its header (``c/NAME.h``) and a readable reference with the same rules: a Gymnasium env (a
PettingZoo ``ParallelEnv`` for several agents) deriving from :class:`SingleAgentReference` or
:class:`MultiAgentReference`, which names the int parameters the C game's ``configure`` reads
(``PARAMS``, attribute names, in order) and the end-of-episode metrics its ``step`` reports
(``METRICS``). Its :class:`CGame` record says how to register and train it.

Example:
    >>> class Coin(SingleAgentReference):
    ...     PARAMS = ("flips",)
    ...     flips = 5
    >>> Coin().params()
    [5]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gymnasium
from pettingzoo import ParallelEnv

__all__ = ["CGame", "GameReference", "SingleAgentReference", "MultiAgentReference"]


@dataclass(frozen=True)
class CGame:
    """How a plugin registers one C game: its reference env class (the binding; the C block is built
    from its header), the return that counts as solved and what that means in the game's own terms, and
    the training defaults that reach it.

    Attributes:
        name: the header's stem (``c/NAME.h``), also its table row's name.
        reference: the Python reference env class.
        solved_return / solved_meaning: the solved threshold and one phrase saying what it means.
        config / gpu_config / policy / groups / outcome: as in :class:`pufferbox.api.TrainDefaults`.
        check_kwargs: settings under which a short rollout ends episodes both ways (the CUDA check;
            truncations alone for a reference with ``TERMINATES = False``, terminations alone for one
            with ``TRUNCATES = False``).
        cuda_type: the C struct's name, for a game that also runs as a CUDA kernel ("" for none).
    """

    name: str
    reference: type
    solved_return: float
    solved_meaning: str
    config: dict = field(default_factory=dict)
    gpu_config: dict = field(default_factory=dict)
    policy: object = None
    groups: object = None
    outcome: object = None
    check_kwargs: dict = field(default_factory=dict)
    cuda_type: str = ""


class GameReference:
    """What every reference shares: ``params()``, the int parameters in the order the C game reads them
    (the attributes named by ``PARAMS``), the end-of-episode ``METRICS`` it reports, and whether its
    episodes can terminate (``TERMINATES = False``: truncation is its only end, so checks that provoke
    both ends expect only that one)."""

    PARAMS: tuple[str, ...] = ()
    METRICS: tuple[str, ...] = ()
    TERMINATES: bool = True
    TRUNCATES: bool = True

    def params(self) -> list[int]:
        return [int(getattr(self, name)) for name in self.PARAMS]


class SingleAgentReference(GameReference, gymnasium.Env):
    """A one-agent game's reference: a Gymnasium env."""


class MultiAgentReference(GameReference, ParallelEnv):
    """A multi-agent game's reference: a PettingZoo ParallelEnv whose agents' spaces sit in two dicts."""

    observation_spaces: dict
    action_spaces: dict

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        return self.action_spaces[agent]

    def together(self, observations: dict, rewards: dict, terminated: bool, truncated: bool, info: dict) -> tuple:
        """A step's five dicts when every agent ends the episode together."""
        agents = self.possible_agents
        flags = ({a: terminated for a in agents}, {a: truncated for a in agents})
        return observations, rewards, *flags, {a: dict(info) for a in agents}
