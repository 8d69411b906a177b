"""Spot-safe training: ``trainfit watch`` (preemption notices -> stop request -> checkpoint -> restart exit
code), the complete-checkpoint marker used on resume, the metric table shared by the Hugging Face callback
and the monitoring generators.

Nothing here imports torch, transformers or prometheus_client; the Trainer side lives in
:mod:`trainfit.integrations.hf`.
"""

from trainfit.watch.checkpoint import latest_complete_checkpoint, resume_from
from trainfit.watch.protocol import RESTART_EXIT_CODE, STOP_FILE_ENV

__all__ = ["latest_complete_checkpoint", "resume_from", "RESTART_EXIT_CODE", "STOP_FILE_ENV"]
