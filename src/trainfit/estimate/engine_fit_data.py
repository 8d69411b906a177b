"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 116
N_SOURCES = 14
FITTED = {
    'gemm_eff_megatron': 0.589057,
    'gemm_eff_native': 0.664201,
    'gemm_eff_hf': 0.546926,
    'elem_bytes_megatron': 6.28497,
    'elem_bytes_native': 10.328927,
    'elem_bytes_hf': 14.440979,
    'gemm_half_dim': 134.927783,
    'attention_relative_megatron': 0.847823,
    'attention_relative_native': 0.580195,
    'fa2_hopper_factor': 0.551889,
    'ridge_exponent': 0.13733,
    'fp8_eff_megatron': 0.582865,
    'fp8_eff_native': 0.500417,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.500312,
    'moe_elementwise_factor': 1.031825,
    'fp8_cast_bytes': 2.022143,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000594,
    'grouped_gemm_half_tokens': 1142.74003,
    'zero_hook_seconds': 5.1e-05,
}
