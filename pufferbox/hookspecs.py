"""The plugin contract: every hook a pufferbox plugin may implement, and nothing else.

A plugin is a module (or object) named by an entry point in the ``pufferbox`` group::

    [project.entry-points.pufferbox]
    myenvs = "myenvs.plugin"

and implements hooks with :data:`hookimpl`::

    from pufferbox import EnvBuild, EnvSpec, hookimpl

    @hookimpl
    def register_envs(register):
        register(EnvSpec(name="myenv", build=EnvBuild(binding=make_my_env)))
"""

import pluggy

hookspec = pluggy.HookspecMarker("pufferbox")
hookimpl = pluggy.HookimplMarker("pufferbox")


@hookspec
def register_envs(register):
    """Call ``register(EnvSpec(...))`` once per environment this plugin provides."""


@hookspec
def register_commands(cli):
    """Add click commands or groups to the ``pufferbox`` CLI group ``cli``."""
