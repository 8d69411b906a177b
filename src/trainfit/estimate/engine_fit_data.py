"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-06'
N_ROWS = 228
N_SOURCES = 24
FITTED = {
    'gemm_eff_megatron': 0.661727,
    'gemm_eff_native': 0.680326,
    'gemm_eff_hf': 0.560543,
    'elem_bytes_megatron': 6.138316,
    'elem_bytes_hf': 14.185644,
    'attention_relative_megatron': 1.012951,
    'attention_relative_native': 0.953419,
    'fa2_hopper_factor': 0.579081,
    'fp8_eff_megatron': 0.583109,
    'launch_seconds': 1e-05,
    'moe_elementwise_factor': 1.074976,
    'grouped_gemm_half_tokens': 1102.930386,
}
