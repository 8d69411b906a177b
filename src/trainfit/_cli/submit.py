"""``trainfit submit DIR_or_dlc_job.json``: dry run by default, ``--yes`` sends through the PAI-DLC SDK."""

from __future__ import annotations

import argparse

from trainfit._cli.common import add_json_option, float_arg, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "submit", help="submit a rendered PAI-DLC job (dry run unless --yes)",
        description="Print the PAI-DLC CreateJob request of a rendered job (dry run), or send it with --yes "
                    "through the official SDK. Credentials come from the standard Alibaba Cloud credential "
                    "chain and are never printed or written.")
    p.add_argument("path", metavar="DIR_OR_JSON", help="dlc_job.json or the folder `trainfit render` wrote")
    p.add_argument("--yes", action="store_true", help="really submit (default: dry run)")
    p.add_argument("--region", default=None,
                   help="region id (default: the region the job was rendered for, from its trainfit header or image "
                        "registry; else cn-hangzhou)")
    p.add_argument("--endpoint", help="API endpoint (default pai-dlc.REGION.aliyuncs.com)")
    p.add_argument("--protocol", default="https", choices=("https", "http"), help=argparse.SUPPRESS)
    p.add_argument("--timeout", type=float_arg("--timeout", 0, 600, lo_open=True), default=30.0,
                   help="total seconds for the request (default 30)")
    p.add_argument("--no-check", action="store_true", help="submit even when `trainfit check` finds errors")
    add_json_option(p)
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

        print(f"dry run: POST https://{res.endpoint}/api/v1/jobs (region {res.region}, from {res.region_source}); "
              "nothing was sent")
        t = res.target
        if t is not None:
            print(f"job: workspace {t.workspace_id or 'default (none in the job)'}; resource "
                  f"{t.resource_id or 'public resources (no ResourceId)'}; resource class {t.resource_class or 'not stated'}")
        print(json.dumps(res.body, indent=2, ensure_ascii=False))
        for v in res_check.violations:
            print(f"check {v.severity}: {v.rule}: {v.message}")
        print("credentials: taken from the Alibaba Cloud credential chain at send time (not read in a dry run)")
        print(f"to send: trainfit submit {Path(args.path)} --region {res.region} --yes")
        return 0
    print(f"submitted: job {res.job_id} (request {res.request_id}) in {res.region}")
    return 0
