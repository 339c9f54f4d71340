"""A plugin whose import fails, as when a dependency is missing or the code has a bug."""

raise ImportError("pufferbox_broken_example needs the 'no-such-simulator' package (broken on purpose)")
