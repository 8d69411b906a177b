"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 126
N_SOURCES = 14
FITTED = {
    'gemm_eff_megatron': 0.576689,
    'gemm_eff_native': 0.688597,
    'gemm_eff_hf': 0.580373,
    'elem_bytes_megatron': 6.161969,
    'elem_bytes_native': 10.247373,
    'elem_bytes_hf': 14.307709,
    'gemm_half_dim': 132.170511,
    'attention_relative_megatron': 0.819835,
    'attention_relative_native': 0.611616,
    'fa2_hopper_factor': 0.541183,
    'ridge_exponent': 0.130772,
    'fp8_eff_megatron': 0.597665,
    'fp8_eff_native': 0.490656,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.504094,
    'moe_elementwise_factor': 1.035267,
    'fp8_cast_bytes': 2.018727,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000596,
    'grouped_gemm_half_tokens': 1144.667432,
    'triton_attention_factor': 0.57447,
    'zero3_host_seconds': 0.00033,
    'zero_hook_seconds': 5.1e-05,
}
