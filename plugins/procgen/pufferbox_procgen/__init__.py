"""The 16 Procgen games as a pufferbox plugin: ``procgen/<game>``, single and natively batched."""
