"""The public surface for plugin authors: everything an environment plugin may import from pufferbox.

Plugins import from here (or from ``pufferbox`` itself, which re-exports ``EnvSpec`` and
``hookimpl``), never from pufferbox's internal modules, so those can change without breaking
plugins; ``tests/test_layering.py`` enforces it for the first-party plugins. Kernel plugins may
also use :mod:`pufferbox.cuda.rng` (the counter-based RNG their CPU references must mirror), and
plugin tests :mod:`pufferbox.conformance` and :mod:`pufferbox.conformance.testing`.

Names resolve on first use (PEP 562), so importing this module costs nothing: a plugin that
only registers envs does not pull torch in.

Example:
    >>> from pufferbox.api import EnvSpec, ObservationSpec
    >>> EnvSpec.__name__, ObservationSpec.__name__
    ('EnvSpec', 'ObservationSpec')
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
EXPORTS: dict[str, str] = {
    # registration
    "EnvSpec": "pufferbox.registry",
    "EnvBuild": "pufferbox.registry",
    "TrainDefaults": "pufferbox.registry",
    "EnvMeta": "pufferbox.registry",
    "hookimpl": "pufferbox.hookspecs",
    "get_registry": "pufferbox.registry",
    "resolve": "pufferbox.registry",
    # flattening and rows
    "ObservationSpec": "pufferbox.spaces",
    "ActionSpec": "pufferbox.spaces",
    "SpaceError": "pufferbox.spaces",
    "Buffers": "pufferbox.buffers",
    "emulate": "pufferbox.emulation",
    "APIUsageError": "pufferbox.emulation",
    # native batched envs and their episodes
    "NativeBlock": "pufferbox.vector.native",
    "episodes_ended": "pufferbox.vector.native",
    "Episodes": "pufferbox.episodes",
    "NO_EPISODES": "pufferbox.episodes",
    # GPU kernels
    "CudaImplementation": "pufferbox.cuda.spec",
    "BatchedReference": "pufferbox.cuda.reference",
    # C games (the SDK: a plugin's headers and references, compiled and registered by pufferbox)
    "CGame": "pufferbox.native",
    "CGameLibrary": "pufferbox.native",
    "GameRng": "pufferbox.native",
    "GameReference": "pufferbox.native",
    "SingleAgentReference": "pufferbox.native",
    "MultiAgentReference": "pufferbox.native",
    "NativeBuildError": "pufferbox.native",
    "ACTION_ONE": "pufferbox.native",
    "continuous_action_space": "pufferbox.native",
    "quantize_actions": "pufferbox.native",
    # encoders a plugin's default policy may build on
    "CNNEncoder": "pufferbox.encoders",
    "MLPEncoder": "pufferbox.encoders",
    "layer_init": "pufferbox.encoders",
}
# The trainer's entry points, for a plugin's tests only (its policy builds into an agent, its defaults
# resolve): a plugin's own modules never use them, so an env plugin never depends on the trainer
# (tests/test_layering.py checks both rules).
TEST_EXPORTS: dict[str, str] = {
    "build_agent": "pufferbox.train.policies",
    "resolve_config": "pufferbox.train.config",
}
EXPORTS |= TEST_EXPORTS

__all__ = sorted(EXPORTS)

if TYPE_CHECKING:  # the same names, imported statically for type checkers and editors
    from pufferbox.buffers import Buffers  # noqa: F401
    from pufferbox.cuda.reference import BatchedReference  # noqa: F401
    from pufferbox.cuda.spec import CudaImplementation  # noqa: F401
    from pufferbox.emulation import APIUsageError, emulate  # noqa: F401
    from pufferbox.encoders import CNNEncoder, MLPEncoder, layer_init  # noqa: F401
    from pufferbox.episodes import NO_EPISODES, Episodes  # noqa: F401
    from pufferbox.hookspecs import hookimpl  # noqa: F401
    from pufferbox.native import (  # noqa: F401
        ACTION_ONE,
        CGame,
        CGameLibrary,
        GameReference,
        GameRng,
        MultiAgentReference,
        NativeBuildError,
        SingleAgentReference,
        continuous_action_space,
        quantize_actions,
    )
    from pufferbox.registry import EnvBuild, EnvMeta, EnvSpec, TrainDefaults, get_registry, resolve  # noqa: F401
    from pufferbox.spaces import ActionSpec, ObservationSpec, SpaceError  # noqa: F401
    from pufferbox.train.config import resolve_config  # noqa: F401
    from pufferbox.train.policies import build_agent  # noqa: F401
    from pufferbox.vector.native import NativeBlock, episodes_ended  # noqa: F401


def __getattr__(name: str) -> Any:
    module = EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"pufferbox.api has no {name!r}; plugins may use: {', '.join(__all__)}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return __all__
