"""The JSON API (FastAPI's TestClient): the same answers as the CLI's --json, 422 with the field and the fix for
bad requests, never a 500."""

from __future__ import annotations

import contextlib
import io
import json
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from trainfit.cli import main  # noqa: E402
from trainfit.options import PLAN_OPTIONS, WORKLOAD_OPTIONS  # noqa: E402
from trainfit.web.app import create_app  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "check"


@pytest.fixture(scope="module")
def client():
    # raise_server_exceptions=False: an unhandled error shows as the 500 a user would get, and the tests fail on it
    with TestClient(create_app(), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        yield c


def cli_json(argv: list[str]) -> tuple[int, object]:
    """Run the CLI in-process and parse what it prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    return rc, json.loads(out.getvalue())


def flags(body: dict) -> list[str]:
    """The CLI arguments of an API body (field seq_len -> --seq-len VALUE; booleans as flags)."""
    by_name = {o.name: o for o in WORKLOAD_OPTIONS + PLAN_OPTIONS}
    argv: list[str] = []
    for k, v in body.items():
        if k == "model":
            argv.insert(0, v)
            continue
        o = by_name.get(k)
        flag = o.cli_flag if o else "--" + k.replace("_", "-")
        if isinstance(v, bool) and k not in ("grad_ckpt", "sequence_parallel"):
            argv += [flag] if v else []  # plain switches (--spot)
        elif isinstance(v, bool):
            argv.append(flag if v else {"grad_ckpt": "--no-grad-ckpt",
                                        "sequence_parallel": "--no-sequence-parallel"}[k])
        else:
            argv += [flag, str(v)]
    return argv


MEMORY_CASES = [
    {"model": "Qwen3-8B", "method": "lora", "gpu": "A10"},
    {"model": "Qwen3-8B", "method": "full", "gpu": "H800", "seq_len": "4k", "micro_batch": 2},
    {"model": "Qwen3-32B", "method": "qlora", "gpu_mem": 40, "grad_ckpt": False},
    {"model": "Qwen3-0.6B"},
    {"model": "Qwen3-30B-A3B", "method": "full", "gpus": 8, "strategy": "zero3", "gpu": "H800", "ep": 2},
    {"model": "Qwen3-14B", "method": "full", "gpus": 8, "strategy": "zero3", "offload": "optimizer",
     "instance_type": "ecs.gn7i-c8g1.2xlarge"},
]


@pytest.mark.parametrize("body", MEMORY_CASES, ids=lambda b: "-".join(str(v) for v in b.values()))
def test_memory_is_exactly_the_cli_json(client, body):
    rc, expected = cli_json(["memory", *flags(body), "--json"])
    assert rc == (1 if expected.get("verdict") == "oom" else 0)  # the CLI exits 1 on oom
    r = client.post("/api/memory", json=body)
    assert r.status_code == 200, r.text
    assert r.json() == expected


PLAN_CASES = [
    {"model": "Qwen3-8B", "method": "lora", "tokens": "2B"},
    {"model": "Qwen3-8B", "method": "full", "tokens": "500M", "objective": "time", "provider": "alibaba"},
    {"model": "Qwen3-4B", "method": "lora", "dataset_tokens": "100M", "epochs": 3, "gpu": "A10", "micro_batch": 2},
    {"model": "Qwen3-14B", "method": "full", "tokens": "1B", "gpus": 8, "strategy": "zero3", "spot": True},
    {"model": "Qwen3-8B", "method": "lora", "tokens": "1B", "provider": "tencent", "allow_fp16": True},
    # the page's inputs: Lingjun, region, GPU memory, the per-region prices, and RL sizing (= plan --rl ...)
    {"model": "Qwen3-8B", "method": "lora", "tokens": "1B", "provider": "alibaba", "resource_class": "pai-lingjun",
     "region": "cn-wulanchabu", "gpu_mem": 80, "compare_regions": True},
    {"model": "Qwen3-0.6B", "method": "lora", "rl": "grpo", "steps": 50, "prompt_len": 256, "response_len": 512,
     "num_generations": 4, "rollout_engine": "vllm", "rollout_tp": 1},
]


@pytest.mark.parametrize("body", PLAN_CASES, ids=lambda b: "-".join(str(v) for v in b.values()))
def test_plan_is_exactly_the_cli_json(client, body):
    _, expected = cli_json(["plan", *flags(body), "--json"])
    r = client.post("/api/plan", json=body)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got == expected
    assert got["plans"] or got["rejected"]
    if got["plans"]:  # the page states the basis the plans were ranked by
        assert got["ranking"]["basis"] in ("cost", "gpu_hours", "hours") and got["ranking"]["why_first"]


def test_pasted_config_is_the_cli_config(client, tmp_path):
    cfg = {"model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 12,
           "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
           "max_position_embeddings": 40960, "tie_word_embeddings": True}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    _, expected = cli_json(["memory", "--config", str(p), "--method", "lora", "--gpu", "T4", "--json"])
    for pasted in (cfg, json.dumps(cfg)):
        r = client.post("/api/memory", json={"config": pasted, "method": "lora", "gpu": "T4"})
        assert r.status_code == 200, r.text
        got = r.json()
        assert got["params"] == expected["params"] and got["breakdown_gib"] == expected["breakdown_gib"]
        assert got["verdict"] == expected["verdict"]
    # a server path is never read from a web request
    r = client.post("/api/memory", json={"config": str(p)})
    assert r.status_code == 422 and r.json()["error"]["field"] == "config"


BAD = [
    ({"model": "Qwen3-8B", "method": "lorra"}, "method", "did you mean lora"),
    ({"model": "Qwen3-8B", "seq_len": "abc"}, "seq_len", None),
    ({"model": "Qwen3-8B", "seq_len": -5}, "seq_len", None),
    ({"model": "Qwen3-8B", "micro_batch": 1.5}, "micro_batch", None),
    ({"model": "Qwen3-8B", "gpus": "²"}, "gpus", None),
    ({"model": "Qwen3-8B", "sq_len": 4096}, "sq_len", "did you mean seq_len"),
    ({"model": "Qwen3-8x"}, "model", "did you mean"),
    ({"model": "Qwen3-8B", "gpu": "A1O"}, "gpu", None),
    ({"model": "Qwen3-8B", "gpu": "A10; rm -rf /"}, "gpu", None),
    ({"model": "Qwen3-8B", "gpu_mem": "nan"}, "gpu_mem", None),
    ({"model": "Qwen3-8B", "seq_len": {"a": 1}}, "seq_len", None),
    ({"model": 8}, "model", None),
    ({}, None, "Qwen3-8B"),
    ({"config": "{not json"}, "config", None),
    ({"config": {"model_type": "qwen3"}}, "config", None),
]


@pytest.mark.parametrize("body,field,fix", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_memory_request_is_422_with_field_and_fix(client, body, field, fix):
    r = client.post("/api/memory", json=body)
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["message"] and err["code"]
    assert err["field"] == field
    assert err["fix"], err
    if fix:
        assert fix in err["fix"]


def test_error_message_is_the_cli_message(client):
    """The same input gate: the API's message is the one the CLI prints (the CLI names the flag, the API the
    field)."""
    err_out = io.StringIO()
    with contextlib.redirect_stderr(err_out), contextlib.redirect_stdout(io.StringIO()):
        assert _exit_code(["plan", "Qwen3-8B", "--tokens", "2B", "--objective", "cheap"]) == 2
    r = client.post("/api/plan", json={"model": "Qwen3-8B", "tokens": "2B", "objective": "cheap"})
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["field"] == "objective"
    assert err["message"].startswith("objective: ")
    assert "--" + err["message"] in err_out.getvalue()
    r2 = client.post("/api/memory", json={"model": "Nope-1B"})
    _, cli = cli_json(["memory", "Nope-1B", "--json"])
    assert r2.json()["error"]["message"] == cli["error"]["message"]
    assert r2.json()["error"]["fix"] == cli["error"]["fix"]


def test_plan_without_tokens_is_422(client):
    r = client.post("/api/plan", json={"model": "Qwen3-8B"})
    assert r.status_code == 422
    assert "tokens" in r.json()["error"]["fix"]


def test_not_an_object_is_422(client):
    for raw in (b"[1, 2]", b"not json", b'"x"', b"", b"{" * 10000, b'{"model": "Qwen3-8B", "seq_len": NaN}',
                b'{"model": "Qwen3-8B", "gpu_mem": Infinity}', b'{"model": "Qwen3-8B", "gpus": 1e999}'):
        r = client.post("/api/memory", content=raw, headers={"Content-Type": "application/json"})
        assert r.status_code == 422, (raw[:20], r.status_code)
        assert r.json()["error"]["fix"]


_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=12), st.sampled_from(["4k", "2B", "1e400", "-0", "nan", "inf", "lora", "zero3",
                                                           "A10", "H800", "0x10", "1_000", "８"]))
_value = st.one_of(_scalar, st.lists(_scalar, max_size=3), st.dictionaries(st.text(max_size=3), _scalar, max_size=2))
_mem_keys = st.sampled_from([o.name for o in WORKLOAD_OPTIONS] + ["gpu", "gpu_mem", "host_ram", "instance_type",
                                                                  "config", "bogus"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=st.dictionaries(_mem_keys, _value, max_size=4))
def test_fuzz_memory_never_500(client, extra):
    r = client.post("/api/memory", json={"model": "Qwen3-0.6B", **extra})
    assert r.status_code in (200, 422), (extra, r.status_code, r.text[:300])
    if r.status_code == 422:
        assert r.json()["error"]["message"]


_plan_keys = st.sampled_from([o.name for o in PLAN_OPTIONS] + ["gpus", "strategy", "micro_batch", "method"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=st.dictionaries(_plan_keys, _value, max_size=3))
def test_fuzz_plan_never_500(client, extra):
    r = client.post("/api/plan", json={"model": "Qwen3-0.6B", "tokens": "100M", "max_gpus": 8, **extra})
    assert r.status_code in (200, 422), (extra, r.status_code, r.text[:300])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.dictionaries(st.sampled_from(["plan", "pick", "target", "region", "job_name", "vpc", "gpu",
                                             "learning_rate", "save_steps", "model", "epochs"]), _value, max_size=4))
def test_fuzz_render_never_500(client, body):
    r = client.post("/api/render", json=body)
    assert r.status_code in (200, 422), (body, r.status_code, r.text[:300])


def test_render_zip_is_what_cli_render_writes(client, tmp_path):
    _, doc = cli_json(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "2B", "--json"])
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(doc))
    # a plan of the second provider in the ranking (not the first plan), with the region of its instance
    first_provider = doc["plans"][0]["provider"]
    pick = next(i for i, p in enumerate(doc["plans"], 1) if p["provider"] != first_provider)
    regions = (doc["plans"][pick - 1].get("instance") or {}).get("regions") or []
    region = ["--region", regions[0]] if regions else []
    out = tmp_path / "job"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["render", "--plan", str(plan_file), "--pick", str(pick), *region, "--out", str(out)]) == 0
    expected = {p.name: p.read_text() for p in out.iterdir()}
    extra = {"region": regions[0]} if regions else {}
    for body in ({"plan": doc["plans"][pick - 1], **extra}, {"plan": doc, "pick": pick, **extra}):
        r = client.post("/api/render", json=body)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"] == "application/zip"
        z = zipfile.ZipFile(io.BytesIO(r.content))
        got = {Path(i.filename).name: z.read(i).decode() for i in z.infolist()}
        assert got == expected
        for i in z.infolist():
            assert bool(i.external_attr >> 16 & 0o100) == i.filename.endswith(".sh")


def test_render_from_options_and_errors(client):
    r = client.post("/api/render", json={"model": "Qwen3-8B", "method": "lora", "gpu": "A10", "target": "deepspeed"})
    assert r.status_code == 422 and r.json()["error"]["fix"]  # lora on one GPU: no DeepSpeed config applies
    r = client.post("/api/render", json={"model": "Qwen3-8B", "method": "lora", "gpu": "A10", "target": "torchrun"})
    assert r.status_code == 200
    assert "launch.sh" in [Path(n).name for n in zipfile.ZipFile(io.BytesIO(r.content)).namelist()]
    r = client.post("/api/render", json={"plan": {"schema": "trainfit.plan/1"}})
    assert r.status_code == 422 and r.json()["error"]["field"] == "plan"
    r = client.post("/api/render", json={"model": "Qwen3-8B", "gpu": "A10", "target": "dlcc"})
    assert r.status_code == 422 and "did you mean dlc" in r.json()["error"]["fix"]


@pytest.mark.parametrize("name", ["dlc_public_cap.json", "launch_world_size.sh", "pytorchjob_nnodes.yaml",
                                  "malformed.json"])
def test_check_upload_is_the_cli_check(client, name, tmp_path):
    src = FIXTURES / name
    local = tmp_path / name
    local.write_bytes(src.read_bytes())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", str(local), "--json"])
    text = out.getvalue()
    r = client.post("/api/check", files={"file": (name, src.read_bytes())})
    if text.startswith('{"error"'):  # a file check cannot read: 422 with the same message
        assert r.status_code == 422
        assert r.json()["error"]["message"].replace(str(local), name).startswith(
            json.loads(text)["error"]["message"].replace(str(local), name)[:30])
        return
    expected = json.loads(text.replace(str(local), name))
    assert r.status_code == 200, r.text
    assert r.json() == {**expected, "file": name}


def test_check_upload_limits(client):
    r = client.post("/api/check", files={"file": ("../../etc/passwd", b"{}")})
    assert r.status_code in (200, 422)
    assert "/etc" not in r.text
    r = client.post("/api/check", files={"file": ("job.json", b"x" * (2 * 2**20 + 10))})
    assert r.status_code == 422 and "limit" in r.json()["error"]["message"]
    r = client.post("/api/check", files={"file": ("a b;c.json", b"{}")})
    assert r.status_code == 422 and r.json()["error"]["field"] == "file"
    r = client.post("/api/check")
    assert r.status_code == 422 and r.json()["error"]["field"] == "file"


def test_models_and_catalog_are_the_cli_json(client):
    _, models = cli_json(["models", "--json"])
    assert client.get("/api/models").json() == models
    cat = client.get("/api/catalog").json()
    _, gpus = cli_json(["catalog", "show", "gpus", "--json"])
    _, inst = cli_json(["catalog", "show", "instances", "--json"])
    assert cat == {"gpus": gpus, "instances": inst}


def test_openapi_documents_typed_models(client):
    spec = client.get("/openapi.json").json()
    for path in ("/api/memory", "/api/plan", "/api/render", "/api/check", "/api/models", "/api/catalog"):
        assert path in spec["paths"]
    props = spec["components"]["schemas"]["MemoryRequest"]["properties"]
    assert {"model", "method", "seq_len", "gpu"} <= set(props)
    assert props["method"].get("enum") == ["full", "lora", "qlora", "freeze"] or "enum" in json.dumps(props["method"])
    assert "PlanResponse" in spec["components"]["schemas"] and "ErrorResponse" in spec["components"]["schemas"]
    assert client.get("/docs").status_code == 200


def test_openapi_lists_every_option_the_service_takes(client):
    """The request models come from the option table the service parses with: memory takes the RL options too
    (``memory --rl``), so its schema must list them (it did not)."""
    from trainfit.options import PLAN_OPTIONS, RL_OPTIONS, WORKLOAD_OPTIONS

    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for model, options in (("MemoryRequest", WORKLOAD_OPTIONS + RL_OPTIONS),
                           ("PlanRequest", WORKLOAD_OPTIONS + PLAN_OPTIONS + RL_OPTIONS)):
        missing = {o.name for o in options} - set(schemas[model]["properties"])
        assert not missing, (model, missing)
    r = client.post("/api/memory", json={"model": "Qwen3-0.6B", "rl": "grpo", "gpu": "A100-80GB-SXM"})
    assert r.status_code == 200 and "binding_phase" in r.json()["rl"]  # the RL phases, as memory --rl --json


def test_page_and_assets_are_local(client):
    r = client.get("/")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    assert "default-src 'self'" in r.headers["content-security-policy"]
    static = Path(__file__).resolve().parents[2] / "src" / "trainfit" / "web" / "static"
    for p in static.rglob("*"):
        if p.suffix in (".html", ".js", ".css") and "vendor" not in p.parts:
            text = p.read_text()
            assert "http://" not in text and "https://" not in text and "//cdn" not in text, p
    assert client.get("/static/vendor/chart.umd.min.js").status_code == 200
    assert (static / "vendor" / "chart.js-LICENSE.md").is_file()


def _exit_code(argv: list[str]) -> int:
    """main's return code, or the code of the SystemExit argparse raises (--help, a refused option)."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1


def test_serve_is_a_command():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert _exit_code(["serve", "--help"]) == 0
    assert "--port" in out.getvalue()
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        assert _exit_code(["serve", "--port", "99999"]) == 2
    assert "65535" in err.getvalue()


def test_oversized_body_is_refused_not_read(client):
    from trainfit.web.app import MAX_BODY_BYTES

    r = client.post("/api/plan", content=b" " * (MAX_BODY_BYTES + 1), headers={"Content-Type": "application/json"})
    assert r.status_code == 413  # FastAPI's own limit (newer versions) or ours: either refuses before reading
