"""``trainfit calibrate RESULTS``: fold a GPU probe's measured speed into the user's calibration overlay."""

from __future__ import annotations

import argparse
from pathlib import Path

from trainfit._cli.arguments import add_options
from trainfit._cli.common import print_json
from trainfit.i18n import _
from trainfit.command_options import COMMAND_OPTIONS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate", help=_("fold measured tokens/s (benchmarks/gpu_probe.py results) into the speed model"),
        description=_("Compare each run of a GPU probe results file (benchmarks/gpu_probe.py) with the speed "
                    "model's prediction for the same configuration on that GPU, and store the median "
                    "measured/predicted factor per GPU and engine family in the calibration overlay "
                    "($TRAINFIT_CALIBRATION, else ~/.config/trainfit/calibration.yaml). Later estimates on that "
                    "GPU say 'calibrated on <GPU>, <date>'."))
    add_options(p, COMMAND_OPTIONS["calibrate"])
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from trainfit.errors import WorkloadError
    from trainfit.calibrate import MAX_RESULTS_BYTES, fold
    from trainfit.calibration_file import calibration_path, save
    from trainfit.inputs import loads_json, read_text_file

    path = Path(args.results)
    fix = _("pass the JSON that benchmarks/gpu_probe.py wrote")
    text = read_text_file(path, max_bytes=MAX_RESULTS_BYTES, what=_("probe results"), error=WorkloadError, fix=fix)
    results = loads_json(text, what=_("probe results {path}").format(path=str(path)[:200]), error=WorkloadError)
    if args.gpu is not None:
        from trainfit.inputs import as_ident

        args.gpu = as_ident("--gpu", args.gpu, "gpu")
    cals = fold(results, source=str(path)[:1000], gpu=args.gpu)
    written = None if args.dry_run else save(cals)
    out = {"calibrations": [{"gpu": c.gpu, "family": c.family, "factor": round(c.factor, 4), "runs": c.runs,
                             "date": c.date, "spread": list(c.spread)} for c in cals],
           "written": str(written) if written else None, "overlay": str(calibration_path())}
    if args.json:
        print_json(out)
        return 0
    for c in cals:
        print(c.line())
    print(_("wrote {path}").format(path=written) if written else _("dry run: nothing written"))
    return 0
