"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-06'
N_ROWS = 228
N_SOURCES = 24
FITTED = {
    'gemm_eff_megatron': 0.661873,
    'gemm_eff_native': 0.680299,
    'gemm_eff_hf': 0.557051,
    'elem_bytes_megatron': 6.13821,
    'elem_bytes_hf': 14.222274,
    'attention_relative_megatron': 1.013034,
    'attention_relative_native': 0.953669,
    'fa2_hopper_factor': 0.579037,
    'fp8_eff_megatron': 0.583118,
    'launch_seconds': 1e-05,
    'moe_elementwise_factor': 1.078669,
    'grouped_gemm_half_tokens': 1102.743975,
}
