"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 106
N_SOURCES = 13
FITTED = {
    'gemm_eff_megatron': 0.604684,
    'gemm_eff_native': 0.600521,
    'gemm_eff_hf': 0.538617,
    'elem_bytes_megatron': 6.569121,
    'elem_bytes_native': 10.568104,
    'elem_bytes_hf': 14.671996,
    'gemm_half_dim': 128.574971,
    'attention_relative_megatron': 0.850773,
    'attention_relative_native': 0.497607,
    'ampere_factor': 1.203594,
    'fp8_eff_megatron': 0.621082,
    'fp8_eff_native': 0.452147,
    'launch_seconds': 9e-06,
    'compile_elementwise_factor': 0.509631,
    'moe_elementwise_factor': 1.082121,
    'fp8_cast_bytes': 2.047151,
    'expert_sync_seconds': 3.2e-05,
    'zero3_fetch_seconds': 0.000597,
    'grouped_gemm_half_tokens': 1147.457731,
    'zero_hook_seconds': 5.1e-05,
}
