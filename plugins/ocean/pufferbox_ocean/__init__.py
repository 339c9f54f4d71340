"""Ocean: small, fast sanity environments that each catch one class of RL bug.

Every env has a single-env Gymnasium (or PettingZoo) version in :mod:`.envs` and a
native batched numpy version in :mod:`.native` that is bit-for-bit identical to it.
"""
