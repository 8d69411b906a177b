"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 126
N_SOURCES = 14
FITTED = {
    'gemm_eff_megatron': 0.588556,
    'gemm_eff_native': 0.663421,
    'gemm_eff_hf': 0.564735,
    'elem_bytes_megatron': 6.283067,
    'elem_bytes_native': 10.330547,
    'elem_bytes_hf': 14.305023,
    'gemm_half_dim': 133.164647,
    'attention_relative_megatron': 0.847565,
    'attention_relative_native': 0.583566,
    'fa2_hopper_factor': 0.550461,
    'ridge_exponent': 0.137817,
    'fp8_eff_megatron': 0.582593,
    'fp8_eff_native': 0.499806,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.500355,
    'moe_elementwise_factor': 1.036152,
    'fp8_cast_bytes': 2.022187,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000595,
    'grouped_gemm_half_tokens': 1142.593292,
    'zero3_host_seconds': 0.00033,
    'zero_hook_seconds': 5.1e-05,
}
