"""The Ocean games' readable references: one Gymnasium or PettingZoo env per game, the same rules as
its C header in ``pufferbox_ocean/c`` with the same generator, so the native check compares them bit
for bit. Each also renders (ANSI and RGB) for ``pufferbox eval``."""
