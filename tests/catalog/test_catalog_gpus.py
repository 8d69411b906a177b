"""get_gpu / list_gpus / instances: resolution, did-you-mean, light imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trainfit.catalog import get_gpu, get_instance, list_gpus, list_instances
from trainfit.errors import CatalogError, UnknownGPUError


@pytest.mark.parametrize("name,canonical", [
    ("A100-80GB", "A100-80GB-SXM"),
    ("a100", "A100-80GB-SXM"),
    ("NVIDIA A100-SXM4-80GB", "A100-80GB-SXM"),
    ("A100-PCIE-40GB", "A100-40GB-PCIe"),
    ("Tesla T4", "T4"),
    ("tesla_v100-sxm2-16gb", "V100-16GB"),
    ("Tesla-V100-16G", "V100-16GB"),  # DLC ResourceConfig.GPUType example
    ("H100", "H100-SXM"),
    ("NVIDIA H100 80GB HBM3", "H100-SXM"),
    ("h20", "H20"),
    ("H200", "H200-SXM"),
    ("gu30", "GU30"),
])
def test_get_gpu_resolves(name, canonical):
    assert get_gpu(name).name == canonical


def test_get_gpu_fields_have_units():
    g = get_gpu("A100-80GB")
    assert g.mem_gib == 80 and g.mem_bytes == 80 * 2**30
    assert g.mem_bandwidth_gbps == 2039 and g.nvlink_gbps == 600
    assert g.peak_tflops("bf16") == 312 and g.peak_tflops("amp-bf16") == 312
    assert g.peak_tflops("fp8") is None  # Ampere: no FP8
    assert get_gpu("H100").peak_tflops("fp8") == pytest.approx(2 * get_gpu("H100").peak_tflops("bf16"), rel=0.01)
    with pytest.raises(ValueError):
        g.peak_tflops("int4")
    assert get_gpu("T4").bf16_dense_tflops is None
    assert get_gpu("GU7E").mem_gib is None  # unknown stays unknown


def test_unknown_gpu_did_you_mean():
    with pytest.raises(UnknownGPUError) as ei:
        get_gpu("A100-8OGB")
    assert "A100-8OGB" in ei.value.message
    assert "did you mean" in ei.value.fix and "A100-80GB-SXM" in ei.value.fix
    with pytest.raises(UnknownGPUError) as ei:
        get_gpu("H2000")
    assert "H200-SXM" in ei.value.fix or "H20" in ei.value.fix
    with pytest.raises(UnknownGPUError) as ei:
        get_gpu("zzzzzz")
    assert "did you mean" not in ei.value.fix and "catalog show gpus" in ei.value.fix


def test_list_gpus_is_the_file_in_order():
    names = [g.name for g in list_gpus()]
    assert names[0] == "T4" and "H20" in names and len(names) == len(set(names))


def test_instances():
    inst = get_instance("ECS.GN6I-C24G1.12XLARGE")
    assert inst.gpu == "T4" and inst.gpu_count == 2 and inst.gpu_spec.mem_gib == 16
    assert inst.price_per_hour is None and inst.spot_price_per_hour is None
    lj = list_instances(resource_class="pai-lingjun")
    assert lj and all(i.inter_node == "rdma" for i in lj)
    assert [i.instance_type for i in list_instances(gpu="H100")] == ["generic-1xH100", "generic-8xH100"]
    with pytest.raises(CatalogError) as ei:
        get_instance("ecs.gn7i-c8g1.2xlarg")
    assert "ecs.gn7i-c8g1.2xlarge" in ei.value.fix


def test_catalog_import_stays_light_and_lazy():
    code = (
        "import sys\n"
        "import trainfit.catalog, trainfit.rules, trainfit._cli.catalog\n"
        "from trainfit.catalog import _store\n"
        "assert _store.bundled_rows.cache_info().currsize == 0, 'CSV read at import'\n"
        "from trainfit.catalog import get_gpu\n"
        "assert get_gpu('A100').mem_gib == 80\n"
        "from trainfit.rules import evaluate_instance\n"
        "evaluate_instance('generic-8xH100', nodes=2)\n"
        "bad = [m for m in ('pandas', 'torch', 'transformers') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_usable_memory_loses_ecc_share_on_gddr_only():
    from trainfit.catalog.gpus import get_gpu

    assert get_gpu("A10").usable_mem_gib == pytest.approx(24 * 15 / 16)  # nvidia-smi: 23028 MiB
    assert get_gpu("T4").usable_mem_gib == pytest.approx(15.0)  # nvidia-smi: 15360 MiB
    assert get_gpu("H100").usable_mem_gib == get_gpu("H100").mem_gib
