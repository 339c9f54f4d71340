"""pufferbox: fast reinforcement learning in a box.

Example:
    >>> import pufferbox
    >>> env = pufferbox.make("cartpole")         # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)            # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from pufferbox.hookspecs import hookimpl
from pufferbox.registry import EnvBuild, EnvMeta, EnvSpec, TrainDefaults

__version__ = "0.1.0"
__all__ = ["EnvBuild", "EnvMeta", "EnvSpec", "TrainDefaults", "hookimpl", "make", "__version__"]


def make(name: str, **kwargs: Any) -> Any:
    """One flattened env: a ``GymnasiumEmulator`` or a ``PettingZooEmulator`` for ``name``."""
    from pufferbox.registry import get_registry

    return get_registry().get(name).make_emulated(**kwargs)
