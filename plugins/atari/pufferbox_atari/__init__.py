"""Atari 2600 games (ale-py, ROMs bundled) as a pufferbox plugin: ``atari/<game>``, e.g. ``breakout``."""
