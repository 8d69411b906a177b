"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-06'
N_ROWS = 96
N_SOURCES = 10
FITTED = {
    'gemm_eff_megatron': 0.602564,
    'gemm_eff_native': 0.711864,
    'gemm_eff_hf': 0.58406,
    'elem_bytes_megatron': 6.191567,
    'elem_bytes_native': 10.076281,
    'elem_bytes_hf': 14.318734,
    'gemm_half_dim': 130.475489,
    'attention_relative_megatron': 0.796559,
    'attention_relative_native': 0.628117,
    'fa2_hopper_factor': 0.508247,
    'ridge_exponent': 0.122328,
    'fp8_eff_megatron': 0.57555,
    'fp8_eff_native': 0.490573,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.502488,
    'moe_elementwise_factor': 1.075379,
    'fp8_cast_bytes': 2.01337,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000618,
    'grouped_gemm_half_tokens': 1200.684739,
    'triton_attention_factor': 0.569683,
    'zero3_host_seconds': 0.00033,
    'zero_hook_seconds': 5.1e-05,
}
