"""Loaded by Python at start-up when ``trainfit watch --hf-callback`` puts this folder first on PYTHONPATH:
adds TrainfitCallback to every Hugging Face Trainer of the training command (ms-swift, LLaMA-Factory, TRL
and plain scripts alike), then runs the ``sitecustomize`` this one shadows, if there is one."""

import os as _os
import sys as _sys

try:
    from trainfit.integrations.hf_autoload import activate as _activate

    _activate()
except Exception as _e:  # never break the training command's start-up
    print(f"trainfit: could not attach TrainfitCallback automatically: {_e}", file=_sys.stderr)


def _chain() -> None:
    import importlib.util

    here = _os.path.dirname(_os.path.abspath(__file__))
    for entry in _sys.path:
        if not entry or _os.path.abspath(entry) == here:
            continue
        candidate = _os.path.join(entry, "sitecustomize.py")
        if _os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_trainfit_shadowed_sitecustomize", candidate)
            if spec and spec.loader:
                spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


_chain()
