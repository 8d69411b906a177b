"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-06'
N_ROWS = 225
N_SOURCES = 23
FITTED = {
    'gemm_eff_megatron': 0.671567,
    'gemm_eff_native': 0.696218,
    'gemm_eff_hf': 0.561086,
    'elem_bytes_megatron': 6.123906,
    'elem_bytes_hf': 14.203408,
    'attention_relative_megatron': 1.014734,
    'attention_relative_native': 0.962386,
    'fa2_hopper_factor': 0.582356,
    'fp8_eff_megatron': 0.586256,
    'launch_seconds': 9e-06,
    'moe_elementwise_factor': 1.09407,
    'grouped_gemm_half_tokens': 1110.640427,
}
