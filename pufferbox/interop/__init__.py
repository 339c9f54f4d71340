"""Drop pufferbox vector envs into other RL libraries' loops.

* :mod:`pufferbox.interop.sb3`: :class:`~pufferbox.interop.sb3.SB3VecEnv`, a Stable-Baselines3 ``VecEnv``.
* :mod:`pufferbox.interop.cleanrl`: :class:`~pufferbox.interop.cleanrl.EpisodeStatistics`, Gymnasium's
  ``infos["episode"]`` layout for CleanRL-style loops (the backends already are Gymnasium ``VectorEnv``\\ s).
"""
