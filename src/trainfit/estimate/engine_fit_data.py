"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 110
N_SOURCES = 13
FITTED = {
    'gemm_eff_megatron': 0.571668,
    'gemm_eff_native': 0.595327,
    'gemm_eff_hf': 0.531227,
    'elem_bytes_megatron': 7.872575,
    'elem_bytes_native': 10.543401,
    'elem_bytes_hf': 14.763964,
    'gemm_half_dim': 134.581076,
    'attention_relative_megatron': 0.792069,
    'attention_relative_native': 0.496876,
    'ampere_factor': 1.233066,
    'fp8_eff_megatron': 0.644603,
    'fp8_eff_native': 0.453915,
    'launch_seconds': 9e-06,
    'compile_elementwise_factor': 0.507205,
    'moe_elementwise_factor': 1.313282,
    'fp8_cast_bytes': 2.037718,
    'expert_sync_seconds': 3.2e-05,
    'zero3_fetch_seconds': 0.000596,
    'zero_hook_seconds': 5.1e-05,
}
