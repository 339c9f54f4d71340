"""PettingZoo's butterfly envs and MPE (mpe2) as a pufferbox plugin of fixed-slot multi-agent envs."""
