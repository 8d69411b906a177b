"""Schema and sanity checks of the bundled catalogs, read with the csv module independently of the loader."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from importlib import resources
from pathlib import Path

import pytest

from trainfit.catalog._schema import GPU_COLUMNS, INSTANCE_COLUMNS, RESOURCE_CLASSES, parse_row
from trainfit.catalog.gpus import normalize_gpu_name

# Names that public articles used but that no official source knows (shared/reference/pai-facts.md 7f).
FAKE_INSTANCE_TYPES = {
    "ml.gx8xf.8xlarge-gu108", "ml.gx8xf.16xlarge-gu108", "ml.gn7i.2xlarge", "ml.gn8v.4xlarge",
    "ml.gu8tf.8.40xlarge",
}
# Names in claims.md that pai-facts.md confirms as real.
REAL_CLAIM_NAMES = {"ml.gu7xf.8xlarge-gu108"}
CLAIMS_MD = Path(__file__).resolve().parents[3] / "shared" / "reference" / "claims.md"  # ../shared beside the repo


def _rows(name: str) -> list[dict[str, str]]:
    text = resources.files("trainfit.catalog").joinpath(f"data/{name}").read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


GPUS = _rows("gpus.csv")
INSTANCES = _rows("instances.csv")


def test_header_matches_schema():
    assert list(GPUS[0]) == [c.name for c in GPU_COLUMNS]
    assert list(INSTANCES[0]) == [c.name for c in INSTANCE_COLUMNS]


@pytest.mark.parametrize("name,rows,cols", [("gpus.csv", GPUS, GPU_COLUMNS), ("instances.csv", INSTANCES, INSTANCE_COLUMNS)])
def test_every_row_parses_with_source_and_date(name, rows, cols):
    today = dt.date.today()
    for i, raw in enumerate(rows):
        assert None not in raw, f"{name} row {i + 2} has too many fields"
        row, problems = parse_row(cols, raw, f"{name} row {i + 2}")
        assert problems == []
        assert row["source"] and len(row["source"]) > 8
        assert dt.date.fromisoformat(row["as_of"]) <= today
        assert row["verified"] in (True, False)


def test_required_gpus_present():
    names = {normalize_gpu_name(r["name"]) for r in GPUS} | {
        normalize_gpu_name(a) for r in GPUS for a in r["aliases"].split(";") if a}
    for want in ["T4", "A10", "L4", "L20", "V100-16GB", "V100-32GB", "A100-40GB-PCIe", "A100-40GB-SXM",
                 "A100-80GB-PCIe", "A100-80GB-SXM", "A800", "H100-PCIe", "H100-SXM", "H800", "H20", "H200", "GU30"]:
        assert normalize_gpu_name(want) in names, want


def _f(v: str) -> float | None:
    return float(v) if v.strip() else None


@pytest.mark.parametrize("r", GPUS, ids=[r["name"] for r in GPUS])
def test_gpu_units_are_sane(r):
    mem, marketed = _f(r["mem_gib"]), _f(r["mem_gb_marketed"])
    # One convention: mem_gib is the datasheet number read as GiB.
    assert mem == marketed
    if mem is not None:
        assert 8 <= mem <= 256
    bw = _f(r["mem_bandwidth_gbps"])
    if bw is not None:
        assert 200 <= bw <= 10_000  # GB/s, not Gbit/s, not TB/s
        if r["mem_type"].startswith("HBM"):
            assert bw >= 700
        else:
            assert bw <= 1200
    bf16, fp16, fp8 = _f(r["bf16_dense_tflops"]), _f(r["fp16_dense_tflops"]), _f(r["fp8_dense_tflops"])
    for x in (bf16, fp16, fp8):
        if x is not None:
            assert 5 <= x <= 2500  # dense; a sparse H100 number (1979 bf16) would fail the checks below
    if bf16 is not None and fp16 is not None:
        assert bf16 == fp16
    if bf16 is not None and fp8 is not None:
        assert fp8 == pytest.approx(2 * bf16, rel=0.02)
    if r["arch"] in ("turing", "volta", "pascal"):
        assert bf16 is None and fp8 is None  # no BF16/FP8 tensor cores before Ampere/Ada
    if r["arch"] == "ampere":
        assert fp8 is None
    if r["form_factor"] == "pcie":
        assert r["nvlink_gbps"] == ""  # bridges are not counted; the instance row says how GPUs talk
    if r["form_factor"].startswith("sxm"):
        assert r["nvlink_gbps"] != ""


def test_verified_gpu_rows_cite_a_url_and_code_names_are_unverified():
    for r in GPUS:
        if r["verified"] == "yes":
            assert "http" in r["source"], r["name"]
        if r["vendor"] == "unknown":
            assert r["verified"] == "no" and r["pai_codes"], r["name"]
            assert r["bf16_dense_tflops"] == "" and r["mem_bandwidth_gbps"] == ""  # nothing invented


def test_known_datasheet_numbers():
    by = {r["name"]: r for r in GPUS}
    assert _f(by["H100-SXM"]["bf16_dense_tflops"]) == 989  # NVIDIA's dense peak (NeMo uses 989)
    assert _f(by["A100-80GB-SXM"]["mem_bandwidth_gbps"]) == 2039
    assert _f(by["H200-SXM"]["mem_gib"]) == 141
    assert by["A10"]["mem_type"] == "GDDR6" and by["A100-80GB-SXM"]["mem_type"] == "HBM2e"
    assert _f(by["H800-SXM"]["nvlink_gbps"]) < _f(by["H100-SXM"]["nvlink_gbps"])


def test_gpu_names_and_aliases_are_unique():
    seen: dict[str, str] = {}
    for r in GPUS:
        for n in [r["name"], *[a for a in r["aliases"].split(";") if a]]:
            k = normalize_gpu_name(n)
            assert k not in seen or seen[k] == r["name"], f"{n} used by {seen.get(k)} and {r['name']}"
            seen[k] = r["name"]


def test_instance_gpu_references_resolve():
    names = {normalize_gpu_name(r["name"]) for r in GPUS}
    for r in INSTANCES:
        if r["gpu"]:
            assert normalize_gpu_name(r["gpu"]) in names, r["instance_type"]


def test_no_fake_instance_types():
    types = {r["instance_type"] for r in INSTANCES}
    assert not types & FAKE_INSTANCE_TYPES
    assert not any(t.startswith(("ml.gx", "ml.gn")) for t in types)


@pytest.mark.skipif(not CLAIMS_MD.is_file(), reason="shared reference folder not available")
def test_no_instance_name_from_the_claims_file_unless_confirmed():
    quoted = set(re.findall(r'"(ml\.[a-z0-9.\-]+)"', CLAIMS_MD.read_text(encoding="utf-8")))
    assert quoted, "the claims file format changed"
    types = {r["instance_type"] for r in INSTANCES}
    assert types & quoted <= REAL_CLAIM_NAMES


def test_ecs_family_letters_match_the_gpu():
    family_gpu = {"gn7i": "A10", "gn6i": "T4", "gn6v": "V100-16GB", "gn6e": "V100-32GB", "gn7s": "A30"}
    for r in INSTANCES:
        m = re.match(r"ecs\.(gn\w+?)-", r["instance_type"])
        if m and m.group(1) in family_gpu:
            assert r["gpu"] == family_gpu[m.group(1)], r["instance_type"]


def test_instance_rows_are_consistent():
    for r in INSTANCES:
        assert r["resource_class"] in RESOURCE_CLASSES
        # a price always comes with a currency and a published source, never invented
        assert (r["price_per_hour"] == "") == (r["currency"] == ""), r["instance_type"]
        if r["price_per_hour"]:
            assert "http" in r["source"]
        if r["gpu_count"] and int(r["gpu_count"]) == 1:
            assert r["intra_node_link"] in ("", "none")
        if r["resource_class"] == "generic":
            assert r["provider"] == "generic" and r["price_per_hour"] == ""
        if r["provider"] == "alibaba":
            assert r["instance_type"].startswith(("ecs.", "ml."))


def _is_path_like(source: str) -> bool:
    return any(s in source for s in ("shared/", "pai-facts", ".ipynb;", "reference/")) and "http" not in source


@pytest.mark.parametrize("name,rows", [("gpus.csv", GPUS), ("instances.csv", INSTANCES)])
def test_sources_are_public_urls_not_files(name, rows):
    for r in rows:
        label = r.get("name") or r.get("instance_type")
        assert not _is_path_like(r["source"]), f"{name}: {label} cites a file: {r['source']}"
        if r.get("provider") in ("alibaba", "tencent"):
            assert r["source"].startswith("http"), f"{label}: source must start with a URL"
            for part in r["source"].split(";"):
                assert part.strip().startswith("http"), f"{label}: {part!r} is not a URL"


def test_rentable_rows_cover_the_gpus_people_ask_about():
    full = [r for r in INSTANCES if r["provider"] in ("alibaba", "tencent") and r["gpu"] and r["gpu_count"]
            and r["ram_gib"] and r["source"].startswith("http")]
    assert len(full) >= 40
    gpus = {normalize_gpu_name(r["gpu"]) for r in full}
    for want in ("A10", "L20", "V100-16GB", "V100-32GB", "T4", "A100-40GB-SXM"):
        assert normalize_gpu_name(want) in gpus, want
    for r in full:
        # a multi-GPU node states how its GPUs talk, or leaves it empty; never 'none'
        if int(r["gpu_count"]) > 1:
            assert r["intra_node_link"] in ("nvlink", "pcie", ""), r["instance_type"]


def test_ecs_rows_match_the_documented_vcpu_naming_rule():
    # ECS doc: Nxlarge = 4N vCPU (xlarge = 4); checked independently of the table the rows came from
    for r in INSTANCES:
        m = re.match(r"ecs\.[a-z0-9-]+\.(\d*)xlarge$", r["instance_type"])
        if m and r["vcpu"]:
            n = int(m.group(1) or 1)
            if r["instance_type"] == "ecs.gn6v-c10g1.20xlarge":
                continue  # the doc lists 82 vCPUs for this 20xlarge type
            if r["instance_type"] == "ecs.gn7-c13g1.6xlarge":
                assert r["vcpu"] == "26"  # DescribeInstanceTypes: 26 vCPUs (c13g1 = 13 vCPU per GPU, 2 GPUs)
                continue
            assert int(r["vcpu"]) == 4 * n, r["instance_type"]
