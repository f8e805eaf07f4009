"""The asynchronous actor-learner (DistRL's design), in one place.

* :mod:`~.board`: :class:`VersionBoard`, where the learner publishes policy versions and the
  actors start episodes through the staleness gate (the collector sees it only as a
  :class:`~distrl_tasks.runners.gate.EpisodeGate`).
* :mod:`~.continuous_learner`: :class:`ContinuousLearner`, which trains on what arrives at a
  fixed replay ratio and publishes every ``K`` updates or ``T`` seconds, and the round's learner
  (opened, wired to a board, exported).
* :mod:`~.process`: the same learner in a process of its own, speaking over a pipe.
* :mod:`~.round`: the continuous round that runs actors and learner together and records the
  result like a round's stages.

Read in that order. Imports run board <- continuous_learner <- process <- round, never back.
"""
