"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-07'
N_ROWS = 238
N_SOURCES = 25
FITTED = {
    'gemm_eff_megatron': 0.648027,
    'gemm_eff_native': 0.680277,
    'gemm_eff_hf': 0.561483,
    'elem_bytes_megatron': 6.193741,
    'elem_bytes_hf': 14.209685,
    'attention_relative_megatron': 1.008713,
    'attention_relative_native': 0.952673,
    'fa2_hopper_factor': 0.580533,
    'fp8_eff_megatron': 0.582845,
    'launch_seconds': 9e-06,
    'moe_elementwise_factor': 1.069173,
    'grouped_gemm_half_tokens': 1120.628805,
}
