"""An optional Weights & Biases sink beside ``metrics.jsonl`` and tensorboard (``TrainConfig.wandb_project``).

Every record's scalars (``agents.storage.metrics.scalars``: the tensorboard names, ``train/...``, ``loss/...``,
``perf/...``,
``eval/...``) go to W&B with ``env_steps``, W&B's x axis for all of them; the run's config is the W&B config.
Process 0 only, like the other logs (``agents.run.training.train`` opens it there).

The W&B run's id is kept in ``RUN_DIR/wandb_run_id``, so a resumed run continues the same W&B run. W&B cannot take
points back: the updates between the checkpoint a run resumes from and the kill were sent once before the kill and
are sent again after it (two points at those env_steps; ``metrics.jsonl`` and tensorboard keep one). A run that
turns W&B on at a resume sends its kept records first, so its W&B run holds the whole history.

W&B's files go under ``RUN_DIR/wandb/``. The usual environment variables apply: ``WANDB_MODE=offline`` logs without
an account or network (``wandb sync RUN_DIR/wandb/offline-run-*`` uploads it later), ``WANDB_ENTITY``,
``WANDB_API_KEY``. A sweep (``agents.run.sweep_loop``) opens one W&B run per member, grouped by the sweep's directory.
"""

from __future__ import annotations

import os
import secrets
import string
from pathlib import Path

RUN_ID_FILE = "wandb_run_id"
_ID_CHARS = string.ascii_lowercase + string.digits


def check_available(project: str) -> None:
    """``RuntimeError`` with the install command when ``project`` is set and the ``wandb`` package is missing."""
    if not project:
        return
    try:
        import wandb  # noqa: F401
    except ImportError:
        raise RuntimeError(
            f'wandb_project={project!r} needs the wandb package: pip install "jaxgame[wandb]" '
            '(or log.wandb_project="" for no W&B)'
        ) from None


class WandbSink:
    """A W&B run receiving a run's scalars (the ``extra_sinks`` of ``agents.storage.metrics.MetricsLog``).

    ``run_dir``: the run's directory (W&B's files and ``wandb_run_id`` go there); ``project``: the W&B project;
    ``config``: the run's config as a dict (W&B's config); ``group``: a W&B group (a sweep's name) or None.
    """

    def __init__(self, run_dir: Path, project: str, config: dict, group: str | None = None):
        check_available(project)
        import wandb

        run_dir = Path(run_dir)
        id_file = run_dir / RUN_ID_FILE
        self.replays_kept = not id_file.exists()  # a new W&B run gets the history kept by a resume
        if self.replays_kept:
            id_file.write_text("".join(secrets.choice(_ID_CHARS) for _ in range(12)) + "\n")
        self.run_id = id_file.read_text().strip()
        self.run = wandb.init(
            project=project,
            id=self.run_id,
            resume="allow",
            dir=str(run_dir),
            config=config,
            name=os.path.basename(os.path.abspath(run_dir)),
            group=group,
            reinit="create_new",
        )
        self.run.define_metric("env_steps")
        self.run.define_metric("*", step_metric="env_steps")

    def add(self, step: int, values: dict[str, float]) -> None:
        self.run.log({"env_steps": step, **values})

    def flush(self) -> None:
        pass  # W&B sends in the background

    def close(self) -> None:
        self.run.finish()


def sinks(config, run_dir, group: str | None = None) -> list:
    """``[WandbSink]`` for a config with ``wandb_project`` set, else ``[]``."""
    if not config.log.wandb_project:
        return []
    return [WandbSink(run_dir, config.log.wandb_project, config.to_dict(), group)]


__all__ = ["RUN_ID_FILE", "WandbSink", "check_available", "sinks"]
