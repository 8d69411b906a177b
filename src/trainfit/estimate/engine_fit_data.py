"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-06'
N_ROWS = 107
N_SOURCES = 12
FITTED = {
    'gemm_eff_megatron': 0.606403,
    'gemm_eff_native': 0.713523,
    'gemm_eff_hf': 0.584536,
    'elem_bytes_megatron': 5.827361,
    'elem_bytes_hf': 14.30994,
    'attention_relative_megatron': 0.589902,
    'attention_relative_native': 0.62385,
    'fa2_hopper_factor': 0.508149,
    'fp8_eff_megatron': 0.56031,
    'launch_seconds': 8e-06,
    'moe_elementwise_factor': 1.002913,
    'grouped_gemm_half_tokens': 1099.346752,
}
