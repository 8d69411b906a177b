"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 61
N_SOURCES = 8
FITTED = {
    'gemm_eff_megatron': 0.556131,
    'gemm_eff_native': 0.553604,
    'gemm_eff_hf': 0.582385,
    'elem_bytes_megatron': 6.179811,
    'elem_bytes_native': 10.378857,
    'elem_bytes_hf': 14.622441,
    'gemm_half_dim': 133.765592,
    'attention_relative_megatron': 0.763276,
    'attention_relative_native': 0.483035,
    'ampere_factor': 1.270051,
    'fp8_eff_megatron': 0.548985,
    'fp8_eff_native': 0.465549,
    'launch_seconds': 9e-06,
    'compile_elementwise_factor': 0.511212,
    'moe_elementwise_factor': 1.032912,
    'fp8_cast_bytes': 2.040883,
    'expert_sync_seconds': 3.1e-05,
    'zero3_fetch_seconds': 0.000633,
    'zero_hook_seconds': 5.2e-05,
}
