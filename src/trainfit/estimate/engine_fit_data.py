"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 110
N_SOURCES = 13
FITTED = {
    'gemm_eff_megatron': 0.567632,
    'gemm_eff_native': 0.613741,
    'gemm_eff_hf': 0.566405,
    'elem_bytes_megatron': 8.252766,
    'elem_bytes_native': 10.613974,
    'elem_bytes_hf': 14.696819,
    'gemm_half_dim': 134.115082,
    'attention_relative_megatron': 0.728804,
    'attention_relative_native': 0.497482,
    'ampere_factor': 1.143061,
    'fp8_eff_megatron': 0.656481,
    'fp8_eff_native': 0.449325,
    'launch_seconds': 9e-06,
    'compile_elementwise_factor': 0.508288,
    'moe_elementwise_factor': 1.389141,
    'fp8_cast_bytes': 2.033723,
    'expert_sync_seconds': 3.1e-05,
    'zero3_fetch_seconds': 0.000596,
    'zero_hook_seconds': 5.1e-05,
}
