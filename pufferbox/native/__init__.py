"""The C game SDK: a plugin ships C headers and their Python references, pufferbox does the rest.

A game is one header of plain structs and three functions over one env (``c/ocean.h`` here says
what they are), ending with its table row ``NAME_GAME``, plus a readable Python reference of the same
rules. From them a plugin gets, without a build step of its own:

- the shared binding (``c/binding.c``), compiled with the headers on first use into the user's
  cache (:mod:`pufferbox.native.build`): :class:`GameBlock` steps a block of envs in one C call;
- the same header as a CUDA kernel (:mod:`pufferbox.native.cuda`), checked byte for byte against
  the CPU block (``pufferbox check NAME --cuda --host``);
- registration (:class:`CGameLibrary`): one EnvSpec per header, whose ``native`` block the
  conformance suite's native check steps beside the reference;
- continuous actions (an action size of 0): :func:`quantize_actions`, the fixed point the C step
  and the reference share (:mod:`pufferbox.native.actions`);
- ``pufferbox new-env NAME --c`` (:mod:`pufferbox.native.scaffold`) writes such a plugin.

Plugins import these names from :mod:`pufferbox.api`. The guide: docs/tutorials/c-game-sdk.md.
"""

from pufferbox.native.actions import ACTION_ONE, continuous_action_space, quantize_actions
from pufferbox.native.block import GameBlock
from pufferbox.native.build import SDK_DIR, NativeBuildError
from pufferbox.native.library import CGameLibrary, CGameSpec
from pufferbox.native.reference import CGame, GameReference, MultiAgentReference, SingleAgentReference
from pufferbox.native.rng import GameRng

__all__ = [
    "ACTION_ONE",
    "SDK_DIR",
    "CGame",
    "CGameLibrary",
    "CGameSpec",
    "GameBlock",
    "GameReference",
    "GameRng",
    "MultiAgentReference",
    "NativeBuildError",
    "SingleAgentReference",
    "continuous_action_space",
    "quantize_actions",
]
