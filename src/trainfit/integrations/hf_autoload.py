"""Attach :class:`trainfit.integrations.hf.TrainfitCallback` to every ``transformers.Trainer`` without
editing the training code: used by ``trainfit watch --hf-callback`` for CLIs that build the Trainer
themselves (ms-swift, LLaMA-Factory, TRL).

:func:`activate` installs an import hook; nothing is imported until the program imports
``transformers.trainer``, after which ``Trainer.__init__`` adds the callback, configured from the
environment: ``TRAINFIT_METRICS_PATH``, ``TRAINFIT_PROMETHEUS_PORT``, ``TRAINFIT_FLOPS_PER_TOKEN``,
``TRAINFIT_PEAK_TFLOPS_PER_GPU``. A Trainer that already has a TrainfitCallback is left alone.
"""

from __future__ import annotations

import importlib.abc
import os
import sys

METRICS_ENV = "TRAINFIT_METRICS_PATH"
PORT_ENV = "TRAINFIT_PROMETHEUS_PORT"
FLOPS_ENV = "TRAINFIT_FLOPS_PER_TOKEN"
PEAK_ENV = "TRAINFIT_PEAK_TFLOPS_PER_GPU"
AUTOLOAD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_autoload")
"""Put this folder first on PYTHONPATH to activate the hook in a child process."""


def _float_env(name: str) -> float | None:
    v = os.environ.get(name)
    try:
        return float(v) if v else None
    except ValueError:
        return None


def callback_from_env():
    from trainfit.integrations.hf import TrainfitCallback

    port = os.environ.get(PORT_ENV)
    return TrainfitCallback(metrics_path=os.environ.get(METRICS_ENV) or None,
                            prometheus_port=int(port) if port else None,
                            flops_per_token=_float_env(FLOPS_ENV), peak_tflops_per_gpu=_float_env(PEAK_ENV))


def _patch(module) -> None:
    trainer_cls = getattr(module, "Trainer", None)
    if trainer_cls is None or getattr(trainer_cls, "_trainfit_patched", False):
        return
    original = trainer_cls.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        from trainfit.integrations.hf import TrainfitCallback

        if not any(isinstance(cb, TrainfitCallback) for cb in self.callback_handler.callbacks):
            self.add_callback(callback_from_env())

    trainer_cls.__init__ = __init__
    trainer_cls._trainfit_patched = True


class _TrainerHook(importlib.abc.MetaPathFinder):
    """Runs :func:`_patch` right after ``transformers.trainer`` is executed."""

    def find_spec(self, name, path, target=None):
        if name != "transformers.trainer":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                loader_exec = spec.loader.exec_module

                def exec_module(module, _exec=loader_exec):
                    _exec(module)
                    _patch(module)

                spec.loader.exec_module = exec_module
                return spec
        return None


def activate() -> None:
    """Patch the Trainer now if transformers.trainer is loaded, else when it is imported."""
    if "transformers.trainer" in sys.modules:
        _patch(sys.modules["transformers.trainer"])
        return
    if not any(isinstance(f, _TrainerHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _TrainerHook())
