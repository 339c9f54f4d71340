"""Crafter as a pufferbox plugin."""
