"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-06'
N_ROWS = 96
N_SOURCES = 10
FITTED = {
    'gemm_eff_megatron': 0.603472,
    'gemm_eff_native': 0.712169,
    'gemm_eff_hf': 0.584605,
    'elem_bytes_megatron': 6.187301,
    'elem_bytes_native': 10.074948,
    'elem_bytes_hf': 14.312715,
    'gemm_half_dim': 130.449302,
    'attention_relative_megatron': 0.796892,
    'attention_relative_native': 0.628317,
    'fa2_hopper_factor': 0.508284,
    'ridge_exponent': 0.122335,
    'fp8_eff_megatron': 0.576019,
    'fp8_eff_native': 0.490618,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.502484,
    'moe_elementwise_factor': 1.074689,
    'fp8_cast_bytes': 2.013234,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000618,
    'grouped_gemm_half_tokens': 1201.06675,
    'triton_attention_factor': 0.569614,
    'zero3_host_seconds': 0.00033,
    'zero_hook_seconds': 5.1e-05,
}
