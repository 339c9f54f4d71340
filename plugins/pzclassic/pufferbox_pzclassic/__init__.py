"""pufferbox plugin: PettingZoo classic games (see :mod:`pufferbox_pzclassic.plugin`)."""
