"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-06'
N_ROWS = 105
N_SOURCES = 11
FITTED = {
    'gemm_eff_megatron': 0.606704,
    'gemm_eff_native': 0.704007,
    'gemm_eff_hf': 0.56955,
    'elem_bytes_megatron': 6.174948,
    'elem_bytes_native': 10.108729,
    'elem_bytes_hf': 14.283996,
    'gemm_half_dim': 129.867869,
    'attention_relative_megatron': 1.016254,
    'attention_relative_native': 0.963503,
    'fa2_hopper_factor': 0.592121,
    'ridge_exponent': 0.121199,
    'fp8_eff_megatron': 0.579887,
    'fp8_eff_native': 0.468783,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.504688,
    'moe_elementwise_factor': 1.066273,
    'fp8_cast_bytes': 2.014726,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000613,
    'grouped_gemm_half_tokens': 1185.203795,
    'triton_attention_factor': 0.545162,
    'zero3_host_seconds': 0.00033,
    'zero_hook_seconds': 5.1e-05,
}
