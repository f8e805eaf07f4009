"""A round's learning chain, written once: label → version → train → evaluate → register.

``distrl round`` (synchronous and asynchronous rounds) and the continuous actor-learner run it
through :func:`learn`; the Airflow DAGs wire their tasks in :data:`LEARN_CHAIN`'s order and
``dvc.yaml`` chains its stages the same way (DVC versions the data itself, so it has no version
stage); tests hold both to it.
"""

from __future__ import annotations

import os
from typing import Any

from distrl_tasks.config import Config
from distrl_tasks.orchestration.round_results import RoundResult

LEARN_CHAIN = ("label", "version", "train", "evaluate", "register")


def learn(
    cfg: Config,
    result: RoundResult,
    workdir: str | os.PathLike,
    *,
    trained: dict[str, Any] | None = None,
) -> RoundResult:
    """Run the chain on round ``result.round``, whose data is collected; fills ``result``.

    Args:
        cfg: the configuration.
        result: the round, its collection done; its stage manifests are filled in.
        workdir: project working directory.
        trained: the train manifest of a learner that trained while the actors collected (the
            continuous actor-learner); the train stage then does not run again.
    """
    from distrl_tasks.stages import (  # lazy: torch + pyarrow
        evaluate,
        label,
        register,
        train,
        version,
    )

    r = result.round
    result.label = label.run(cfg, round=r, workdir=workdir)
    result.version = version.run(cfg, round=r, workdir=workdir)
    data_version = result.version["data_version"]
    if trained is None:
        trained = train.run(cfg, round=r, data_version=data_version, workdir=workdir)
    result.train = trained
    checkpoint = trained["checkpoint_dir"]
    result.evaluate = evaluate.run(
        cfg, round=r, checkpoint_dir=checkpoint, workdir=workdir, track=True
    )
    result.register = register.run(
        cfg,
        round=r,
        checkpoint_dir=checkpoint,
        data_version=data_version,
        evaluation=result.evaluate,
        workdir=workdir,
    )
    return result
