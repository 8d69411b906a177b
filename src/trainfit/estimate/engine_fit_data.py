"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 63
N_SOURCES = 8
FITTED = {
    'gemm_eff_megatron': 0.553712,
    'gemm_eff_native': 0.555358,
    'gemm_eff_hf': 0.569701,
    'elem_bytes_megatron': 7.15971,
    'elem_bytes_native': 10.380377,
    'elem_bytes_hf': 14.899918,
    'gemm_half_dim': 135.11591,
    'attention_relative_megatron': 0.745735,
    'attention_relative_native': 0.481456,
    'ampere_factor': 1.262302,
    'fp8_eff_megatron': 0.537962,
    'fp8_eff_native': 0.46604,
    'launch_seconds': 9e-06,
    'compile_elementwise_factor': 0.510615,
    'moe_elementwise_factor': 1.220214,
    'fp8_cast_bytes': 2.08897,
    'expert_sync_seconds': 3.1e-05,
    'zero3_fetch_seconds': 0.000639,
}
