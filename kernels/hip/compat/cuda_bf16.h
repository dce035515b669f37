// Empty: bp_hip_compat.h provides the bf16 type under its CUDA names.
