"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-06'
N_ROWS = 105
N_SOURCES = 11
FITTED = {
    'gemm_eff_megatron': 0.570499,
    'gemm_eff_native': 0.711504,
    'gemm_eff_hf': 0.584166,
    'elem_bytes_megatron': 5.918111,
    'elem_bytes_native': 10.064034,
    'elem_bytes_hf': 14.286343,
    'gemm_half_dim': 128.311461,
    'attention_relative_megatron': 0.58098,
    'attention_relative_native': 0.626478,
    'fa2_hopper_factor': 0.509486,
    'ridge_exponent': 0.122596,
    'fp8_eff_megatron': 0.572329,
    'fp8_eff_native': 0.491028,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.502261,
    'moe_elementwise_factor': 1.0227,
    'fp8_cast_bytes': 2.012694,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000612,
    'grouped_gemm_half_tokens': 1111.394786,
    'triton_attention_factor': 0.568832,
    'zero3_host_seconds': 0.00033,
    'zero_hook_seconds': 5.1e-05,
}
