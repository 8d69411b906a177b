"""``trainfit submit DIR_or_dlc_job.json``: dry run by default, ``--yes`` sends through the PAI-DLC SDK."""

from __future__ import annotations

import argparse

from trainfit._cli.arguments import add_options
from trainfit._cli.common import print_json
from trainfit._cli.labels import SEVERITY, label
from trainfit.i18n import _
from trainfit.command_options import COMMAND_OPTIONS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "submit", help=_("submit a rendered PAI-DLC job (dry run unless --yes)"),
        description=_("Print the PAI-DLC CreateJob request of a rendered job (dry run), or send it with --yes "
                    "through the official SDK. Credentials come from the standard Alibaba Cloud credential "
                    "chain and are never printed or written."))
    add_options(p, COMMAND_OPTIONS["submit"])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from trainfit.service import submit_job

    res, res_check = submit_job(args.path, region=args.region, yes=args.yes, gate=not args.no_check,
                                endpoint=args.endpoint, protocol=args.protocol, timeout_s=args.timeout)
    if args.json:
        out = res.to_dict()
        out["check"] = res_check.to_dict()
        print_json(out)
        return 0
    if not res.sent:
        import json

        print(_("dry run: POST https://{endpoint}/api/v1/jobs (region {region}, from {source}); nothing was sent")
              .format(endpoint=res.endpoint, region=res.region, source=res.region_source))
        t = res.target
        if t is not None:
            print(_("job: workspace {workspace}; resource {resource}; resource class {resource_class}").format(
                workspace=t.workspace_id or _("default (none in the job)"),
                resource=t.resource_id or _("public resources (no ResourceId)"),
                resource_class=t.resource_class or _("not stated")))
        print(json.dumps(res.body, indent=2, ensure_ascii=False))
        for v in res_check.violations:
            print(_("check {severity}: {rule}: {message}").format(severity=label(SEVERITY, v.severity), rule=v.rule,
                                                                 message=v.message))
        print(_("credentials: taken from the Alibaba Cloud credential chain at send time (not read in a dry run)"))
        print(_("to send: {command}").format(command=f"trainfit submit {Path(args.path)} --region {res.region} --yes"))
        return 0
    print(_("submitted: job {job} (request {request}) in {region}").format(job=res.job_id, request=res.request_id,
                                                                          region=res.region))
    return 0
