"""The benchmark scripts stay runnable: the grid is valid, the GPU probe lists its predictions without a GPU."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_grid_is_valid_and_large_enough():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from grid import GRID, config_id

    from trainfit.models import get_model
    from trainfit.workload import Workload

    assert len(GRID) >= 40
    ids = [config_id(e) for e in GRID]
    assert len(set(ids)) == len(ids)
    for e in GRID:
        get_model(e["model"])
        Workload(**{k: v for k, v in e.items() if k != "model"})


def test_gpu_probe_lists_predictions():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_probe.py"), "--list"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "0.6B" in r.stdout and "MoE-probe" in r.stdout and "tensor peak" in r.stdout
    assert r.stdout.count("tensor peak") == 16  # {dense, MoE} x 2 seq lens x GC on/off x full/LoRA
