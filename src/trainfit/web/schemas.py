"""Typed request and response models of the JSON API (for validation of JSON types and the OpenAPI docs).

The request fields come from the one option table (:mod:`trainfit.options`): each is a JSON scalar (or a list of
strings) whose value is then checked by the input gate, so the API and the CLI accept the same values and give
the same messages. Responses are documented here but sent as the service layer's dicts unchanged (the API must
answer byte-for-byte what ``--json`` prints, so they are not re-serialised through these models).
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, create_model

from trainfit.options import PLAN_OPTIONS, RL_OPTIONS, WORKLOAD_OPTIONS, Option

Scalar = Union[StrictBool, StrictInt, StrictFloat, StrictStr]
ScalarOrList = Union[StrictBool, StrictInt, StrictFloat, StrictStr, list[StrictStr]]
_LISTS = {"lora_targets", "ignore_rule"}


def _option_fields(options: Iterable[Option]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for o in options:
        desc = o.filled(o.help) + (f" (CLI: {o.cli_flag})" if o.help else "")
        extra = {"enum": list(o.choice_values or ())} if o.choices else None
        typ = ScalarOrList if o.name in _LISTS else Scalar
        out[o.name] = (Optional[typ], Field(default=None, description=desc, json_schema_extra=extra))
    return out


_MODEL_FIELDS: dict[str, Any] = {
    "model": (Optional[StrictStr], Field(default=None, description="registry name, e.g. Qwen3-8B (see /api/models)",
                                         examples=["Qwen3-8B"])),
    "config": (Optional[Union[dict[str, Any], StrictStr]],
               Field(default=None, description="a pasted config.json (object or its text) instead of `model`")),
}
# extra keys are let through to the service, which refuses them with "did you mean" (as the CLI does)
_CFG = ConfigDict(extra="allow")

MemoryRequest = create_model(
    "MemoryRequest", __config__=_CFG, __doc__="The options of `trainfit memory` as JSON fields (with `rl`: the RL "
                                              "phases, as `trainfit memory --rl`).",
    **_MODEL_FIELDS, **_option_fields(WORKLOAD_OPTIONS + RL_OPTIONS),
    gpu=(Optional[StrictStr], Field(default=None, description="GPU from the catalog (A10, H800...)", examples=["A10"])),
    gpu_mem=(Optional[Union[StrictInt, StrictFloat, StrictStr]], Field(default=None, description="usable GiB instead of gpu")),
    instance_type=(Optional[StrictStr], Field(default=None, description="instance type from the catalog")),
    host_ram=(Optional[Union[StrictInt, StrictFloat, StrictStr]], Field(default=None, description="host RAM per node, GiB")),
)

PlanRequest = create_model(
    "PlanRequest", __config__=_CFG,
    __doc__="The options of `trainfit plan` as JSON fields: layout fields that are set are pinned, the rest searched.",
    **_MODEL_FIELDS, **_option_fields(WORKLOAD_OPTIONS + PLAN_OPTIONS + RL_OPTIONS),
)

RenderRequest = create_model(
    "RenderRequest", __config__=_CFG,
    __doc__="`trainfit render`: a `plan` (one plan of /api/plan, or the whole answer with `pick`), or the model "
            "and options with `gpu` / `instance_type`; answers a zip of the job files and README.md.",
    **_MODEL_FIELDS, **_option_fields(WORKLOAD_OPTIONS),
    plan=(Optional[dict[str, Any]], Field(default=None, description="a plan from /api/plan (or the whole answer)")),
    pick=(Optional[Union[StrictInt, StrictStr]], Field(default=None, description="which plan of a whole answer, 1 = first")),
    target=(Optional[Union[StrictStr, list[StrictStr]]], Field(default=None, description="targets, default all")),
    gpu=(Optional[StrictStr], Field(default=None)),
    instance_type=(Optional[StrictStr], Field(default=None)),
    tokens=(Optional[Union[StrictInt, StrictFloat, StrictStr]], Field(default=None)),
    spot=(Optional[Union[StrictBool, StrictStr]], Field(default=None)),
    region=(Optional[StrictStr], Field(default=None)),
    workspace_id=(Optional[StrictStr], Field(default=None)),
    resource_id=(Optional[StrictStr], Field(default=None)),
    image=(Optional[StrictStr], Field(default=None)),
    dataset=(Optional[StrictStr], Field(default=None)),
    job_name=(Optional[StrictStr], Field(default=None)),
    checkpoint_uri=(Optional[StrictStr], Field(default=None)),
    vpc=(Optional[dict[str, StrictStr]], Field(default=None)),
    learning_rate=(Optional[Union[StrictInt, StrictFloat, StrictStr]], Field(default=None)),
    epochs=(Optional[Union[StrictInt, StrictFloat, StrictStr]], Field(default=None)),
    save_steps=(Optional[Union[StrictInt, StrictStr]], Field(default=None)),
    spot_discount_limit=(Optional[Union[StrictInt, StrictFloat, StrictStr]], Field(default=None)),
)


class ErrorBody(BaseModel):
    code: str = Field(description="error class, e.g. bad-input, unknown-model, bad-workload")
    message: str = Field(description="what is wrong (the CLI's message)")
    fix: Optional[str] = Field(default=None, description="how to fix it (the CLI's fix)")
    field: Optional[str] = Field(default=None, description="the request field at fault, when one is")


class ErrorResponse(BaseModel):
    """422: a request the service refused, with the field and the fix."""

    error: ErrorBody


class FitDecisionOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    verdict: str
    reserved_gib: float
    usable_gib: Optional[float] = None


class MemoryResponse(BaseModel):
    """`trainfit memory --json` (documented keys; the answer carries every key the CLI prints)."""

    model_config = ConfigDict(extra="allow")
    model: str
    params: dict[str, int]
    tensor_peak_gib: float
    reserved_gib: float
    peak_phase: str
    breakdown_gib: dict[str, float] = Field(description="GiB per term: weights, gradients, optimizer, activations...")
    phases_gib: dict[str, float]
    host_ram_gib: Optional[float] = None
    workload: dict[str, Any]
    gpu: Optional[str] = None
    gpu_mem_gib: Optional[float] = None
    verdict: Optional[str] = Field(default=None, description="fits | tight | oom | unknown (null without a GPU)")
    fits: Optional[bool] = None
    fit: Optional[FitDecisionOut] = None
    headroom_gib: Optional[float] = None
    max_micro_batch: Optional[int] = None
    max_seq_len: Optional[int] = None
    suggestions: list[dict[str, Any]] = []
    oom_risk_limit: Optional[float] = Field(default=None, description="the P(OOM) a plan may carry; a job that fits "
                                            "at or above it gets suggestions too (estimate.fit.OOM_RISK_LIMIT)")
    warnings: list[str] = Field(default=[], description="what the GPU cannot run whatever the memory (e.g. "
                                "FlashAttention-3 off Hopper; `check` rule kernel-support)")


class PlanOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    schema_: str = Field(alias="schema")
    provider: str
    instance_type: Optional[str] = None
    gpu: str
    gpus_per_node: int
    nodes: int
    settings: dict[str, Any]
    verdict: str
    per_gpu_gib: float
    hours: Optional[float] = None
    gpu_hours: Optional[float] = None
    cost: Optional[float] = None
    currency: Optional[str] = None


class RejectionOut(BaseModel):
    instance_type: str
    provider: str
    code: str
    reason: str
    fix: Optional[str] = None


class PlanResponse(BaseModel):
    """`trainfit plan --json`."""

    model_config = ConfigDict(extra="allow")
    schema_: str = Field(alias="schema")
    workload: dict[str, Any]
    plans: list[PlanOut]
    pareto: list[int] = Field(description="indices into plans on the hours-vs-cost frontier")
    rejected: list[RejectionOut]
    notes: list[str]


class CheckViolationOut(BaseModel):
    rule: str
    severity: str
    message: str
    fix: str


class CheckResponse(BaseModel):
    """`trainfit check FILE --json`."""

    file: str
    kind: str
    ok: bool
    violations: list[CheckViolationOut]
    notes: list[str]
    memory: Optional[dict[str, Any]] = Field(default=None, description=(
        "what the memory check found: gpu, reserved_gib with reserved_interval_gib (p10/p50/p90 from the fit "
        "corpus), usable_gib, verdict, oom_probability, binding_phase (RL jobs); null when not checked"))


class CatalogResponse(BaseModel):
    """The catalogs as `trainfit catalog show gpus|instances --json` print them."""

    gpus: list[dict[str, Any]]
    instances: list[dict[str, Any]]
