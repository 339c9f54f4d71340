"""Builds the compiled Ocean games (one extension, every game's header); the rest is in pyproject.toml.

``-ffp-contract=off`` and no ``-ffast-math``: the games must round exactly as their Python references
(no fused multiply-adds, no reordered float expressions).
"""

from glob import glob

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pufferbox_ocean._games",
            sources=["pufferbox_ocean/_games.c"],
            depends=sorted(glob("pufferbox_ocean/c/*.h")),
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math", "-std=gnu11"],
        )
    ]
)
