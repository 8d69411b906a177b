"""--gpu together with --instance-type: they must name the same GPU unless the catalog does not know the
instance's GPU (a Lingjun code the user resolves from the console)."""

from __future__ import annotations

import pytest

from trainfit.cli import main


@pytest.mark.parametrize("argv", [
    ["memory", "Qwen3-8B", "--method", "lora"],
    ["plan", "Qwen3-8B", "--method", "lora", "--tokens", "1B"],
    ["render", "Qwen3-8B", "--method", "lora", "--out", "UNUSED"],
])
def test_gpu_that_contradicts_the_instance_type_is_an_error(argv, capsys, tmp_path):
    """ecs.gn7i-c8g1.2xlarge has one A10: memory and render said 'fits on H800-SXM (80 GiB)' for it, and plan
    answered 'no instance type fits' without saying why."""
    argv = [str(tmp_path / "job") if a == "UNUSED" else a for a in argv]
    assert main(argv + ["--gpu", "H800", "--instance-type", "ecs.gn7i-c8g1.2xlarge"]) == 2
    assert "contradicts --instance-type ecs.gn7i-c8g1.2xlarge, whose GPU is A10" in capsys.readouterr().err
    assert main(argv + ["--gpu", "a10", "--instance-type", "ecs.gn7i-c8g1.2xlarge"]) in (0, 1)  # same GPU: fine


def test_gpu_names_an_undocumented_instance_gpu(capsys):
    """Lingjun's GU108 is a code no public page maps: --gpu says what the console shows, as the README tells."""
    assert main(["memory", "Qwen3-8B", "--method", "lora", "--gpu", "H800",
                 "--instance-type", "ml.gu7xf.c96m1600.8-gu108"]) == 0
    assert "H800-SXM" in capsys.readouterr().out
