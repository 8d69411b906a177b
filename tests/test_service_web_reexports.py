"""trainfit.service_web holds the web API's adapters; every one stays importable from trainfit.service."""

import importlib
import subprocess
import sys

import trainfit.service as service
import trainfit.service_web as service_web


def test_every_web_adapter_is_the_same_object_under_trainfit_service():
    assert service_web.__all__
    for name in service_web.__all__:
        assert getattr(service, name) is getattr(service_web, name), name


def test_either_module_can_be_imported_first():
    for first in ("trainfit.service_web", "trainfit.service"):
        code = (f"import importlib; importlib.import_module({first!r}); "
                "from trainfit.service import check_upload, json_ready, plan_for; "
                "from trainfit.service_web import error_fix; print('ok')")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_web_adapters_call_the_core_functions_of_trainfit_service(monkeypatch):
    seen = []
    import trainfit.service_commands as service_commands

    monkeypatch.setattr(service_commands, "memory_from_options", lambda vals: seen.append(vals) or "report")
    assert importlib.import_module("trainfit.service").memory_from_request({"model": "Qwen3-8B"}) == "report"
    assert seen and seen[0]["model"] == "Qwen3-8B" and seen[0]["config"] is None
