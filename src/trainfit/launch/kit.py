"""The public toolkit of job-file writers: what a render target outside ``launch/`` (a provider's platform writer,
or one registered with :func:`trainfit.targets.register_target`) builds its files from, and what ``check``
reads ms-swift's settings back with. The implementations live in the private ``_common`` / ``_context`` modules and ``deepspeed``."""

from trainfit.launch._common import (comment_text, dump_yaml, format_args, hash_header, install_snippet, q,
                                     resume_snippet, sft_only, swift_args, swift_entry, swift_unsupported,
                                     swift_workload)
from trainfit.launch._context import CKPT_MOUNT, PLACEHOLDER, RenderContext, RenderOptions
from trainfit.launch.deepspeed import ds_config_snippet

__all__ = ["CKPT_MOUNT", "PLACEHOLDER", "RenderContext", "RenderOptions", "comment_text", "ds_config_snippet",
           "dump_yaml", "format_args", "hash_header", "install_snippet", "q", "resume_snippet", "sft_only", "swift_args",
           "swift_entry", "swift_unsupported", "swift_workload"]
