"""Shared refresh helpers: GPU name + memory resolution and the error classification."""

from __future__ import annotations

import socket

import pytest

from trainfit.catalog._store import current_catalog
from trainfit.providers._refresh_common import Deadline, classify, resolve_gpu


@pytest.mark.parametrize("spec,mem,want", [
    ("NVIDIA A10", 24, "A10"),
    ("NVIDIA A100", 80, "A100-80GB-SXM"),
    ("NVIDIA A100", 40, "A100-40GB-SXM"),      # the family default would be the 80 GB part
    ("NVIDIA A100", None, "A100-80GB-SXM"),    # no memory reported: the catalog's documented default
    ("NVIDIA A100", 96, None),                 # no A100 has 96 GB: left unset, never guessed
    ("NVIDIA Z900", 144, None),                # unknown name
])
def test_resolve_gpu(spec, mem, want):
    got, note = resolve_gpu(spec, mem, current_catalog().gpu_index)
    assert (got.name if got else None) == want
    if spec == "NVIDIA A100" and mem == 96:
        assert "96" in note and "unset" in note


class _SdkError(Exception):
    def __init__(self, code, msg, status=None):
        super().__init__(msg)
        self.code, self.status_code = code, status


@pytest.mark.parametrize("exc,needle", [
    (_SdkError("ClientNetworkError", "HTTPConnectionPool: Max retries exceeded ... Connection refused"), "network error"),
    (ConnectionRefusedError(111, "Connection refused"), "network error"),
    (socket.gaierror(-2, "Name or service not known"), "network error"),
    (_SdkError("Throttling.User", "Request was denied due to user flow control.", 400), "throttled"),
    (_SdkError("RequestLimitExceeded", "Your current request times equals to 21", None), "throttled"),
    (_SdkError("InvalidAccessKeyId.NotFound", "Specified access key is not found.", 404), "refused the credentials"),
    (_SdkError("AuthFailure.SignatureFailure", "bad signature"), "refused the credentials"),
    (TimeoutError("timed out"), "timed out"),
])
def test_classify(exc, needle):
    err = classify(exc, what="X", timeout_s=3, cred_fix="fix creds")
    assert needle in err.message and err.fix
    if needle == "network error":
        assert "quota" not in err.message and "throttl" not in err.message


def test_deadline_refuses_calls_after_the_budget():
    d = Deadline(total_s=0.06, per_call_s=5, what="X")
    assert d.call_timeout_s() <= 0.06
    import time

    time.sleep(0.07)
    with pytest.raises(Exception) as ei:
        d.call_timeout_s()
    assert "whole refresh took more than" in str(ei.value)
