"""``trainfit submit DIR_or_dlc_job.json``: dry run by default, ``--yes`` sends through the PAI-DLC SDK."""

from __future__ import annotations

import argparse

from trainfit._cli.common import add_json_option, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "submit", help="submit a rendered PAI-DLC job (dry run unless --yes)",
        description="Print the PAI-DLC CreateJob request of a rendered job (dry run), or send it with --yes "
                    "through the official SDK. Credentials come from the standard Alibaba Cloud credential "
                    "chain and are never printed or written.")
    p.add_argument("path", metavar="DIR_OR_JSON", help="dlc_job.json or the folder `trainfit render` wrote")
    p.add_argument("--yes", action="store_true", help="really submit (default: dry run)")
    p.add_argument("--region", default="cn-hangzhou", help="region id (default cn-hangzhou)")
    p.add_argument("--endpoint", help="API endpoint (default pai-dlc.REGION.aliyuncs.com)")
    p.add_argument("--protocol", default="https", choices=("https", "http"), help=argparse.SUPPRESS)
    p.add_argument("--no-check", action="store_true", help="submit even when `trainfit check` finds errors")
    add_json_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from trainfit.check import check_file
    from trainfit.providers.alibaba.submit import SubmitError, load_job, submit

    path, _ = load_job(args.path)
    res_check = check_file(path, region=args.region)
    if args.yes and not res_check.ok and not args.no_check:
        first = next(v for v in res_check.violations if v.severity == "error")
        raise SubmitError(f"`trainfit check` found {res_check.errors} error(s) in {path}, e.g. {first.rule}: "
                          f"{first.message}", fix=f"{first.fix}; or pass --no-check")
    res = submit(path, region=args.region, yes=args.yes, endpoint=args.endpoint, protocol=args.protocol)
    if args.json:
        out = res.to_dict()
        out["check"] = res_check.to_dict()
        print_json(out)
        return 0
    if not res.sent:
        import json

        print(f"dry run: POST https://{res.endpoint}/api/v1/jobs (region {res.region}); nothing was sent")
        print(json.dumps(res.body, indent=2, ensure_ascii=False))
        for v in res_check.violations:
            print(f"check {v.severity}: {v.rule}: {v.message}")
        print("credentials: taken from the Alibaba Cloud credential chain at send time (not read in a dry run)")
        print(f"to send: trainfit submit {Path(args.path)} --region {res.region} --yes")
        return 0
    print(f"submitted: job {res.job_id} (request {res.request_id}) in {res.region}")
    return 0
