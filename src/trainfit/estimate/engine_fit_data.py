"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-06'
N_ROWS = 113
N_SOURCES = 13
FITTED = {
    'gemm_eff_megatron': 0.603174,
    'gemm_eff_native': 0.712975,
    'gemm_eff_hf': 0.584913,
    'elem_bytes_megatron': 5.604106,
    'elem_bytes_hf': 14.29331,
    'attention_relative_megatron': 0.59176,
    'attention_relative_native': 0.622561,
    'fa2_hopper_factor': 0.509358,
    'fp8_eff_megatron': 0.600596,
    'launch_seconds': 8e-06,
    'moe_elementwise_factor': 1.00771,
    'grouped_gemm_half_tokens': 1093.999529,
}
