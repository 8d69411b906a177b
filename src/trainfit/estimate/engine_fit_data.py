"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 128
N_SOURCES = 15
FITTED = {
    'gemm_eff_megatron': 0.580336,
    'gemm_eff_native': 0.715048,
    'gemm_eff_hf': 0.570288,
    'elem_bytes_megatron': 6.156848,
    'elem_bytes_native': 10.158554,
    'elem_bytes_hf': 14.989569,
    'gemm_half_dim': 131.983674,
    'attention_relative_megatron': 0.831926,
    'attention_relative_native': 0.563381,
    'fa2_hopper_factor': 0.492288,
    'ridge_exponent': 0.133122,
    'fp8_eff_megatron': 0.597101,
    'fp8_eff_native': 0.517761,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.500747,
    'moe_elementwise_factor': 1.102571,
    'fp8_cast_bytes': 2.010895,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000596,
    'grouped_gemm_half_tokens': 1134.555839,
    'triton_attention_factor': 0.582032,
    'zero3_host_seconds': 0.00033,
    'zero_hook_seconds': 5.1e-05,
}
