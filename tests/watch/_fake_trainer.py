"""A stand-in trainer for the watch tests (no torch): ``steps`` steps of ``step_s`` seconds; honours the stop
file like TrainfitCallback (ack + exit 143) unless told to ignore it.

    python _fake_trainer.py OUT_JSON [--steps N] [--step-s S] [--ignore-stop] [--exit CODE]
"""

import argparse
import json
import os
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--steps", type=int, default=400)
ap.add_argument("--step-s", type=float, default=0.02)
ap.add_argument("--ignore-stop", action="store_true")
ap.add_argument("--exit", type=int, default=0)
a = ap.parse_args()
stop = os.environ.get("TRAINFIT_STOP_FILE")
info = {"stop_file": stop, "resume_from": os.environ.get("TRAINFIT_RESUME_FROM"), "pgid": os.getpgrp(),
        "pid": os.getpid(), "stopped_at": None}
def _write_info() -> None:
    # atomically: the test polls for the file and reads it at once (an in-place write can be seen empty)
    with open(a.out + ".tmp", "w") as f:
        json.dump(info, f)
    os.replace(a.out + ".tmp", a.out)


_write_info()
for step in range(1, a.steps + 1):
    time.sleep(a.step_s)
    if stop and os.path.exists(stop) and not a.ignore_stop:
        with open(stop + ".ack", "w") as f:
            json.dump({"step": step, "checkpoint": f"checkpoint-{step}"}, f)
        info["stopped_at"] = step
        info["request"] = json.load(open(stop))
        _write_info()
        sys.exit(143)
sys.exit(a.exit)
