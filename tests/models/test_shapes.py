"""Exact parameter counts from the configs, against published figures."""

import json

import pytest

from trainfit.errors import ModelConfigError, UnknownModelError
from trainfit.models import from_hf_config, get_model, load_config_path, model_names

PUBLISHED = {
    # name: (total, active) -- issue #2 / keras-hub / HF cards (../shared/reference/qwen3-reference.md)
    "Qwen3-0.6B": (596_049_920, 596_049_920),
    "Qwen3-8B": (8_190_735_360, 8_190_735_360),
    "Qwen3-30B-A3B": (30_532_122_624, 3_353_032_704),
    "Qwen3-235B-A22B": (235_093_634_560, 22_190_763_520),
    "Qwen3-Next-80B-A3B": (79_674_391_296, 3_874_929_408),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_exact_counts(name):
    m = get_model(name)
    total, active = PUBLISHED[name]
    assert m.total_params == total
    assert m.active_params == active


def test_dense_layer_count_by_hand():
    # Qwen3-8B: h=4096, 32/8 heads, head_dim 128, I=12288, 36 layers, untied, V=151936
    h, nh, nkv, hd, I, L, V = 4096, 32, 8, 128, 12288, 36, 151936
    layer = h * nh * hd + 2 * h * nkv * hd + nh * hd * h + 2 * hd + 3 * h * I + 2 * h
    assert get_model("Qwen3-8B").total_params == L * layer + 2 * V * h + h
    assert get_model("Qwen3-8B").embedding_params == 2 * V * h


def test_tied_embedding_counted_once():
    m = get_model("Qwen3-0.6B")
    assert m.tie_word_embeddings
    assert m.embedding_params == 151936 * 1024
    assert not any(t.kind == "lm_head" for t in m.tensors())


def test_moe_largest_tensor_is_fused_experts():
    m = get_model("Qwen3-30B-A3B")
    assert m.largest_tensor_params == 128 * 2 * 768 * 2048
    assert "experts" in m.largest_tensor_name


def test_rounding_to_official_statements():
    assert round(get_model("Qwen3-32B").total_params / 1e9, 1) == 32.8
    assert round(get_model("Qwen3-8B").non_embedding_params / 1e9, 2) == 6.95
    assert round(get_model("Qwen3-30B-A3B").non_embedding_params / 1e9, 1) == 29.9


@pytest.mark.parametrize("alias", ["qwen3-8b", "Qwen/Qwen3-8B", "QWEN/qwen3-8B", " Qwen3-8B "])
def test_name_resolution(alias):
    assert get_model(alias).name == "Qwen3-8B"


def test_did_you_mean():
    with pytest.raises(UnknownModelError) as e:
        get_model("Qwen3-8")
    assert "Qwen3-8B" in e.value.fix


def test_registry_has_family_and_2507():
    names = set(model_names())
    for n in ("Qwen3-0.6B", "Qwen3-1.7B", "Qwen3-4B", "Qwen3-8B", "Qwen3-14B", "Qwen3-32B", "Qwen3-30B-A3B",
              "Qwen3-235B-A22B", "Qwen3-Next-80B-A3B", "Qwen3-Coder-480B-A35B-Instruct", "Qwen3-4B-2507",
              "Qwen3-30B-A3B-Instruct-2507", "Qwen3-235B-A22B-2507"):
        assert n in names
    for n in names:
        assert get_model(n).source, n


def test_config_path_and_folder(tmp_path):
    cfg = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False}
    d = tmp_path / "Llama-3.1-8B"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    m = load_config_path(d)
    assert m.name == "Llama-3.1-8B"
    assert m.total_params == 8_030_261_248  # Llama 3.1 8B, published exact count


def test_qwen2_bias_and_no_qk_norm():
    cfg = {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
           "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True}
    assert from_hf_config(cfg).total_params == 494_032_768  # Qwen2.5-0.5B


def test_mistral():
    cfg = {"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "tie_word_embeddings": False}
    assert from_hf_config(cfg).total_params == 7_241_732_096  # Mistral-7B-v0.1


@pytest.mark.parametrize("bad", [{"model_type": "gpt2"}, {"model_type": "qwen3"}, [], {"model_type": "qwen3",
                                 "hidden_size": "x", "num_attention_heads": 2, "num_hidden_layers": 1, "vocab_size": 5}])
def test_bad_configs(bad):
    with pytest.raises(ModelConfigError):
        from_hf_config(bad)


def test_bad_config_file(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("{not json")
    with pytest.raises(ModelConfigError):
        load_config_path(p)
    with pytest.raises(ModelConfigError):
        load_config_path(tmp_path / "missing")
