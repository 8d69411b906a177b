"""``dlc_job.json`` (a PAI-DLC ``CreateJob`` request body, field names of the official SDK's
``alibabacloud_pai_dlc20201203.models.CreateJobRequest``) and ``dlc_submit.sh`` (the ``pai dlc job submit``
command for the same job).

JSON has no comments and the SDK model drops keys it does not know, so the plan header of ``dlc_job.json``
lives in ``dlc_submit.sh`` and in the folder's ``README.md``. The job's ``UserCommand`` is the full
``launch.sh`` (torchrun with PAI's variables, the DeepSpeed config written by a heredoc, resume logic), so
the body is self-contained. Checkpoints go to an OSS path mounted read-write at ``/mnt/checkpoints``.
"""

from __future__ import annotations

import json
from typing import Mapping

from trainfit.launch.kit import comment_text, hash_header, q, sft_only, swift_unsupported, CKPT_MOUNT, RenderContext
from trainfit.launch.torchrun import launch_script
from trainfit.json_types import JSONLike

FILES = ("dlc_job.json", "dlc_submit.sh")
#: AIMaster restarts a failed job (the fault tolerance DLC offers for Lingjun spot), see pai-facts 5.
AIMASTER_ARGS = "--job-execution-mode Async --enable-job-restart True --max-num-of-job-restart 3"


def applies(ctx: RenderContext) -> str | None:
    """A DLC job needs an Alibaba PAI instance type: a generic template or another cloud's type is never written
    into ``EcsSpec``."""
    if (why := sft_only(ctx)):  # an RL plan renders with the verl / swift_grpo targets
        return why
    p = ctx.plan
    if p.provider != "alibaba" or not p.instance_type:
        where = f"{p.instance_type} ({p.provider})" if p.instance_type else f"a {p.gpu} without an instance type"
        return (f"the plan runs on {where}; a PAI-DLC job needs an Alibaba PAI instance type "
                "(plan with --provider alibaba, or render with --instance-type ecs.../ml...)")
    return swift_unsupported(ctx)


def job_body(ctx: RenderContext) -> dict[str, JSONLike]:
    spec: dict[str, JSONLike] = {"Type": "Worker", "PodCount": ctx.nodes, "Image": ctx.image}
    spec["EcsSpec"] = ctx.instance_type
    if ctx.spot:
        spec["UseSpotInstance"] = True
        if ctx.lingjun:
            spec["SpotSpec"] = {"SpotStrategy": "SpotWithPriceLimit",
                                "SpotDiscountLimit": ctx.spot_discount_limit or 0.5}
        else:
            spec["SpotSpec"] = {"SpotStrategy": "SpotAsPriceGo"}
    body: dict[str, JSONLike] = {"DisplayName": ctx.job_name, "JobType": "PyTorchJob", "JobSpecs": [spec],
                            "UserCommand": launch_script(ctx, what="UserCommand of a PAI-DLC job")}
    if ctx.workspace_id:
        body["WorkspaceId"] = ctx.workspace_id
    if ctx.resource_id:
        body["ResourceId"] = ctx.resource_id
    body["DataSources"] = [{"Uri": ctx.checkpoint_uri, "MountPath": CKPT_MOUNT, "MountAccess": "RW"}]
    if ctx.vpc:
        body["UserVpc"] = dict(ctx.vpc)
    envs = {"NCCL_DEBUG": "WARN"}
    if ctx.lingjun and ctx.custom_image:
        envs["TRAINFIT_RDMA_NOTE"] = "custom image: RDMA user-space libraries (rdma-core, NCCL IB) installed"
    body["Envs"] = envs
    settings: dict[str, JSONLike] = {}
    if ctx.lingjun:
        settings["EnableRDMA"] = True
    if ctx.spot:
        settings["EnableErrorMonitoringInAIMaster"] = True
        settings["ErrorMonitoringArgs"] = AIMASTER_ARGS
    if settings:
        body["Settings"] = settings
    return body


def flag_command(ctx: RenderContext, body: Mapping[str, JSONLike]) -> str:
    """The flag form of ``pai dlc job submit`` (name, image, spec, count, spot); it has no flag for
    DataSources, UserVpc or Settings, so the script runs the body form and keeps this as a comment."""
    spec = body["JobSpecs"][0]
    lines = ["pai dlc job submit", f"--name {q(body['DisplayName'])}", "--job-type PyTorchJob"]
    if body.get("WorkspaceId"):
        lines.append(f"--workspace-id {q(body['WorkspaceId'])}")
    if body.get("ResourceId"):
        lines.append(f"--resource-id {q(body['ResourceId'])}")
    if ctx.spot:
        role = f"worker:count={spec['PodCount']},spec={spec['EcsSpec']},image={spec['Image']},spot=true," \
               f"spot-strategy={spec['SpotSpec']['SpotStrategy']}"
        if "SpotDiscountLimit" in spec["SpotSpec"]:
            role += f",spot-discount-limit={spec['SpotSpec']['SpotDiscountLimit']}"
        lines.append(f"--role {q(role)}")
    else:
        lines += [f"--image {q(spec['Image'])}", f"--worker-spec {q(spec['EcsSpec'])}",
                  f"--worker-count {spec['PodCount']}"]
    lines.append('--command "$(cat launch.sh)"')
    return " \\\n    ".join(lines) + "\n"


def render(ctx: RenderContext) -> dict[str, str]:
    body = job_body(ctx)
    sh = ("#!/usr/bin/env bash\n" + hash_header(ctx, "dlc_submit.sh: submit dlc_job.json's job with the PAI CLI")
          + f"# checkpoint mount: {comment_text(ctx.checkpoint_uri)} -> {CKPT_MOUNT} (RW)\n"
            "# The body form sends dlc_job.json as it is (DataSources, UserVpc, Settings included); the same\n"
            "# body goes through the official SDK with `trainfit submit dlc_job.json --yes`.\n"
            "set -eu\ncd \"$(dirname \"$0\")\"\n"
            "pai dlc job submit --body-json \"$(cat dlc_job.json)\"\n"
            "# Flag form (no flag for the checkpoint mount, VPC or settings; use only for jobs without them):\n"
          + "".join(f"#   {comment_text(ln)}\n" for ln in flag_command(ctx, body).splitlines()))
    return {"dlc_job.json": json.dumps(body, indent=2, ensure_ascii=False) + "\n", "dlc_submit.sh": sh}
