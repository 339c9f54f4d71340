"""Builds the compiled CartPole kernel; every other setting is in pyproject.toml.

The flags keep the kernel bit-for-bit with Gymnasium: ``-ffp-contract=off`` forbids fused
multiply-adds (aarch64 and ``-march`` builds would otherwise fuse ``a + b * c``), and there
is deliberately no ``-ffast-math`` (it reorders float expressions).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pufferbox_classic._cartpole",
            sources=["pufferbox_classic/_cartpole.c"],
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math", "-std=gnu11"],
        )
    ]
)
