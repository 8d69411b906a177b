"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 126
N_SOURCES = 14
FITTED = {
    'gemm_eff_megatron': 0.588554,
    'gemm_eff_native': 0.663418,
    'gemm_eff_hf': 0.56473,
    'elem_bytes_megatron': 6.283143,
    'elem_bytes_native': 10.330601,
    'elem_bytes_hf': 14.304648,
    'gemm_half_dim': 133.158888,
    'attention_relative_megatron': 0.847556,
    'attention_relative_native': 0.583574,
    'fa2_hopper_factor': 0.550466,
    'ridge_exponent': 0.13782,
    'fp8_eff_megatron': 0.582592,
    'fp8_eff_native': 0.499803,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.500344,
    'moe_elementwise_factor': 1.036162,
    'fp8_cast_bytes': 2.022202,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000595,
    'grouped_gemm_half_tokens': 1142.585599,
    'zero_hook_seconds': 5.1e-05,
}
