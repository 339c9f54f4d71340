"""MiniGrid and BabyAI as a pufferbox plugin."""
