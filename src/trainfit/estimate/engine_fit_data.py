"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-06'
N_ROWS = 129
N_SOURCES = 13
FITTED = {
    'gemm_eff_megatron': 0.602776,
    'gemm_eff_native': 0.712045,
    'gemm_eff_hf': 0.572086,
    'elem_bytes_megatron': 5.606931,
    'elem_bytes_hf': 14.226038,
    'attention_relative_megatron': 0.591946,
    'attention_relative_native': 0.62712,
    'fa2_hopper_factor': 0.508304,
    'fp8_eff_megatron': 0.600686,
    'launch_seconds': 1e-05,
    'moe_elementwise_factor': 0.999971,
    'grouped_gemm_half_tokens': 1094.320995,
}
