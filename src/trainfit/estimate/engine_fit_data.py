"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 109
N_SOURCES = 13
FITTED = {
    'gemm_eff_megatron': 0.586923,
    'gemm_eff_native': 0.664057,
    'gemm_eff_hf': 0.572087,
    'elem_bytes_megatron': 6.289312,
    'elem_bytes_native': 10.355074,
    'elem_bytes_hf': 14.215677,
    'gemm_half_dim': 131.231088,
    'attention_relative_megatron': 0.849642,
    'attention_relative_native': 0.578571,
    'fa2_hopper_factor': 0.552452,
    'ridge_exponent': 0.139327,
    'fp8_eff_megatron': 0.582781,
    'fp8_eff_native': 0.500446,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.500233,
    'moe_elementwise_factor': 1.038738,
    'fp8_cast_bytes': 2.023836,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.0006,
    'grouped_gemm_half_tokens': 1150.278859,
    'zero_hook_seconds': 5.1e-05,
}
