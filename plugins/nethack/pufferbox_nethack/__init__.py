"""The NetHack Learning Environment (nle) as a pufferbox plugin: ``nethack``, ``nethack/<task>``."""
