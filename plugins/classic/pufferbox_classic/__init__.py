"""Gymnasium's classic-control envs as a pufferbox plugin."""
