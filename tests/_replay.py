"""Local replay servers for the cloud-SDK tests: a 127.0.0.1 HTTP server that answers with documented responses,
and the credential isolation every Alibaba test uses (environment keys only, no config files, no metadata
service, no proxies), so nothing but 127.0.0.1 is ever contacted."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ReplayServer:
    """Base of the per-API replay servers: start a handler class on 127.0.0.1, give its endpoint, close it."""

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.httpd.server_port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def send(handler: BaseHTTPRequestHandler, code: int, payload: bytes) -> None:
    """Answer one request with a JSON body (a client that already hung up is ignored)."""
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    try:
        handler.wfile.write(payload)
    except OSError:
        pass


def isolate_alibaba_credentials(monkeypatch, tmp_path, ak_id: str, ak_secret: str) -> None:
    """The standard Alibaba credential chain reads environment keys first; HOME is isolated (no real
    ~/.alibabacloud or ~/.aliyun config), the ECS metadata service (100.100.100.200) is disabled and proxies are off.
    alibabacloud_credentials reads these variables once, at import, so they are mirrored into its module."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", ak_id)
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", ak_secret)
    monkeypatch.setenv("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
    for v in ("ALIBABA_CLOUD_SECURITY_TOKEN", "ALIBABA_CLOUD_PROFILE", "ALIBABA_CLOUD_ECS_METADATA",
              "ALIBABA_CLOUD_ROLE_ARN", "ALIBABA_CLOUD_OIDC_TOKEN_FILE", "ALIBABA_CLOUD_CREDENTIALS_FILE",
              "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    from alibabacloud_credentials.utils import auth_util

    for attr, value in (("environment_access_key_id", ak_id), ("environment_access_key_secret", ak_secret),
                        ("environment_security_token", None), ("environment_ecs_metadata_disabled", "true"),
                        ("environment_credentials_file", None), ("environment_credentials_uri", None),
                        ("environment_profile_name", None)):
        if hasattr(auth_util, attr):
            monkeypatch.setattr(auth_util, attr, value)
