"""The service layer: every command's logic as functions over typed values. The CLI (``_cli/``), the web API
(``web/``) and the training-time tools call these and only parse and present what comes back.

* :func:`memory_report` - per-GPU memory, the one fit verdict, largest micro-batch / sequence, hints;
* :func:`rl_memory_report` - RL fine-tuning (``--rl grpo|ppo|dpo``): memory per phase (rollout, train, sync),
  KV pool, the verdict over all phases; with a catalog GPU the step time, with ``steps`` the hours;
* :func:`make_plan` - the ranked plans (:class:`~trainfit.plan.types.PlanResult`);
* :func:`plan_for` - one typed :class:`~trainfit.plan.types.Plan` for a given workload on a given GPU or
  instance type (what ``render MODEL options`` renders);
* :func:`load_plan` - a Plan back from ``trainfit plan --json`` output;
* :func:`render_plan` - job files from a Plan (no recomputation);
* :func:`check_file` - every finding of a job file (the same rules and the same fit decision);
* :func:`submit_job` - dry run or send a rendered PAI-DLC job.

The decision "RL or supervised" of ``memory``, ``plan`` and ``render`` and their call into these functions are made
once, for the CLI and the web API alike, by the dispatchers of :mod:`trainfit.service_commands`. The web API's adapters
(``plan_from_options``, ``memory_from_request``, ``render_from_options``, ``check_upload``, ``json_ready``,
``model_rows``, ``option_specs``, ``error_field``, ``error_fix``...) live in :mod:`trainfit.service_web`. The functions
above are defined in :mod:`trainfit.service_core`, below both; this module gathers the core functions and the web
adapters, the one place callers import them from.
"""

from __future__ import annotations

from trainfit.service_core import (check_file, gpu_usable_gib, load_plan, make_plan, MAX_PLAN_BYTES, MEMORY_EXTRA,
                                   memory_report, MemoryReport, plan_for, render_plan, resolve_model, rl_memory_report,
                                   RLMemoryReport, single_target, submit_job, write_rendered)
from trainfit.service_web import (Catalogs, catalogs, check_upload, error_field, ERROR_FIELDS, error_fix, json_ready,
                                  LANG_FIELD, MAX_CHECK_UPLOAD_BYTES, memory_from_request, model_rows, option_specs,
                                  PLAN_EXTRA, plan_from_options, preferred_language, RENDER_EXTRA, render_from_options,
                                  RENDER_OPTION_FIELDS, rendered_files, request_context, request_language)

__all__ = ["Catalogs", "catalogs", "check_file", "check_upload", "error_field", "ERROR_FIELDS", "error_fix",
           "gpu_usable_gib", "json_ready", "LANG_FIELD", "load_plan", "make_plan", "MAX_CHECK_UPLOAD_BYTES",
           "MAX_PLAN_BYTES", "MEMORY_EXTRA", "memory_from_request", "memory_report", "MemoryReport", "model_rows",
           "option_specs", "PLAN_EXTRA", "plan_for", "plan_from_options", "preferred_language", "RENDER_EXTRA",
           "render_from_options", "RENDER_OPTION_FIELDS", "render_plan", "rendered_files", "request_context",
           "request_language", "resolve_model", "rl_memory_report", "RLMemoryReport", "single_target", "submit_job",
           "write_rendered"]
