"""Engine constants fitted by benchmarks/speed_loso.py (generated file, do not edit)."""

FIT_DATE = '2026-12-03'
N_ROWS = 106
N_SOURCES = 13
FITTED = {
    'gemm_eff_megatron': 0.603715,
    'gemm_eff_native': 0.60088,
    'gemm_eff_hf': 0.538789,
    'elem_bytes_megatron': 6.57979,
    'elem_bytes_native': 10.567243,
    'elem_bytes_hf': 14.329471,
    'gemm_half_dim': 128.038518,
    'attention_relative_megatron': 0.850311,
    'attention_relative_native': 0.496159,
    'ampere_factor': 1.203029,
    'fp8_eff_megatron': 0.621009,
    'fp8_eff_native': 0.452453,
    'launch_seconds': 8e-06,
    'compile_elementwise_factor': 0.509576,
    'moe_elementwise_factor': 1.058811,
    'fp8_cast_bytes': 2.047371,
    'expert_sync_seconds': 3e-05,
    'zero3_fetch_seconds': 0.000599,
    'grouped_gemm_half_tokens': 1149.15407,
    'zero_hook_seconds': 5.1e-05,
}
