"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 56
N_SOURCES = 7
FITTED = {
    'gemm_eff_megatron': 0.574133,
    'gemm_eff_native': 0.548343,
    'gemm_eff_hf': 0.588173,
    'elem_bytes_megatron': 7.225255,
    'elem_bytes_native': 10.379099,
    'elem_bytes_hf': 14.829553,
    'gemm_half_dim': 135.563771,
    'attention_relative_megatron': 0.775464,
    'attention_relative_native': 0.476636,
    'ampere_factor': 1.310561,
    'fp8_eff_megatron': 0.55247,
    'fp8_eff_native': 0.469876,
    'launch_seconds': 9e-06,
    'compile_elementwise_factor': 0.512505,
    'moe_elementwise_factor': 1.249966,
    'fp8_cast_bytes': 2.09526,
    'expert_sync_seconds': 3.1e-05,
    'zero3_fetch_seconds': 0.00065,
}
