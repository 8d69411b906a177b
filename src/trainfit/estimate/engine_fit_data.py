"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 128
N_SOURCES = 15
FITTED = {
    'gemm_eff_megatron': 0.591562,
    'gemm_eff_native': 0.684491,
    'gemm_eff_hf': 0.557239,
    'elem_bytes_megatron': 6.272231,
    'elem_bytes_native': 10.248559,
    'elem_bytes_hf': 14.866634,
    'gemm_half_dim': 132.11599,
    'attention_relative_megatron': 0.855865,
    'attention_relative_native': 0.545509,
    'fa2_hopper_factor': 0.505914,
    'ridge_exponent': 0.139469,
    'fp8_eff_megatron': 0.582575,
    'fp8_eff_native': 0.524469,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.497444,
    'moe_elementwise_factor': 1.091545,
    'fp8_cast_bytes': 2.014664,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000594,
    'grouped_gemm_half_tokens': 1133.091997,
    'zero3_host_seconds': 0.00033,
    'zero_hook_seconds': 5.1e-05,
}
