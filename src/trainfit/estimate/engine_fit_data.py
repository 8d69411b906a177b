"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-06'
N_ROWS = 232
N_SOURCES = 25
FITTED = {
    'gemm_eff_megatron': 0.641216,
    'gemm_eff_native': 0.680288,
    'gemm_eff_hf': 0.561472,
    'elem_bytes_megatron': 6.230572,
    'elem_bytes_hf': 14.209121,
    'attention_relative_megatron': 1.005675,
    'attention_relative_native': 0.952352,
    'fa2_hopper_factor': 0.581167,
    'fp8_eff_megatron': 0.58383,
    'launch_seconds': 9e-06,
    'moe_elementwise_factor': 1.066082,
    'grouped_gemm_half_tokens': 1124.195357,
}
