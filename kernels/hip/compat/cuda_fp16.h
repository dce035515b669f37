// Empty: bp_hip_compat.h provides the f16 type under its CUDA names.
