"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 108
N_SOURCES = 13
FITTED = {
    'gemm_eff_megatron': 0.580439,
    'gemm_eff_native': 0.629143,
    'gemm_eff_hf': 0.582645,
    'elem_bytes_megatron': 6.190496,
    'elem_bytes_native': 10.626226,
    'elem_bytes_hf': 14.231354,
    'gemm_half_dim': 132.879441,
    'attention_relative_megatron': 0.790941,
    'attention_relative_native': 0.501089,
    'ridge_exponent': 0.135967,
    'fp8_eff_megatron': 0.580814,
    'fp8_eff_native': 0.433761,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.509724,
    'moe_elementwise_factor': 1.030795,
    'fp8_cast_bytes': 2.037148,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000599,
    'grouped_gemm_half_tokens': 1154.064418,
    'zero_hook_seconds': 5.1e-05,
}
