"""A stranger's plugin: its ``cartpole`` and alias ``acrobot`` clash with pufferbox-classic; ``aadup/coin`` does not."""
