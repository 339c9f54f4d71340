"""Gymnasium MuJoCo as a pufferbox plugin."""
