"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-06'
N_ROWS = 129
N_SOURCES = 13
FITTED = {
    'gemm_eff_megatron': 0.624135,
    'gemm_eff_native': 0.704294,
    'gemm_eff_hf': 0.556075,
    'elem_bytes_megatron': 5.862249,
    'elem_bytes_hf': 14.214697,
    'attention_relative_megatron': 1.038464,
    'attention_relative_native': 0.949502,
    'fa2_hopper_factor': 0.575508,
    'fp8_eff_megatron': 0.614175,
    'launch_seconds': 1e-05,
    'moe_elementwise_factor': 1.048403,
    'grouped_gemm_half_tokens': 1162.855737,
}
