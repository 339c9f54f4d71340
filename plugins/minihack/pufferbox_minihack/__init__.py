"""MiniHack as a pufferbox plugin."""
