"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 61
N_SOURCES = 8
FITTED = {
    'gemm_eff_megatron': 0.556508,
    'gemm_eff_native': 0.553652,
    'gemm_eff_hf': 0.582449,
    'elem_bytes_megatron': 6.173655,
    'elem_bytes_native': 10.379235,
    'elem_bytes_hf': 14.621813,
    'gemm_half_dim': 133.658818,
    'attention_relative_megatron': 0.763185,
    'attention_relative_native': 0.483024,
    'ampere_factor': 1.269671,
    'fp8_eff_megatron': 0.55179,
    'fp8_eff_native': 0.465539,
    'launch_seconds': 9e-06,
    'compile_elementwise_factor': 0.511241,
    'moe_elementwise_factor': 1.031949,
    'fp8_cast_bytes': 2.040956,
    'expert_sync_seconds': 3.1e-05,
    'zero3_fetch_seconds': 0.000633,
    'zero_hook_seconds': 5.2e-05,
}
