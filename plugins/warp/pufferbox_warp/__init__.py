"""PyCUDA kernel envs for pufferbox, each with a numpy CPU reference of the same arithmetic."""
