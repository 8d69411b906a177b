"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 106
N_SOURCES = 13
FITTED = {
    'gemm_eff_megatron': 0.578625,
    'gemm_eff_native': 0.629259,
    'gemm_eff_hf': 0.58313,
    'elem_bytes_megatron': 6.19729,
    'elem_bytes_native': 10.625142,
    'elem_bytes_hf': 14.233527,
    'gemm_half_dim': 132.756716,
    'attention_relative_megatron': 0.789423,
    'attention_relative_native': 0.500249,
    'ridge_exponent': 0.136191,
    'fp8_eff_megatron': 0.578946,
    'fp8_eff_native': 0.43394,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.509605,
    'moe_elementwise_factor': 1.030046,
    'fp8_cast_bytes': 2.037981,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000599,
    'grouped_gemm_half_tokens': 1150.630765,
    'zero_hook_seconds': 5.1e-05,
}
