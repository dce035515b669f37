/*
 * backplane_types.h — the types the application API (backplane.h) and the
 * plugin ABI (plugin-api.h) share: status codes, dtypes, the op table and
 * its enums, device kinds and device records, custom-kernel formats. Both
 * headers include it; nothing else does. It depends on nothing but
 * <stdbool.h>, <stddef.h> and <stdint.h>, and everything in it is part of
 * the plugin ABI (docs/plugin-abi.md): values are never renumbered and
 * structs only grow at the end.
 */
#ifndef BACKPLANE_TYPES_H
#define BACKPLANE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tensors have at most this many dimensions. */
#define BP_MAX_RANK 8

/* ---------------------------------------------------------------------------
 * Status codes. 0 is success, errors are negative. The same values are the
 * public API's (core/backplane.h): a plugin's status reaches the application
 * unchanged, with the message the plugin wrote through set_error.
 */
#define BP_STATUS_MAP(X)                                                        \
  X(OK, 0, "success")                                                           \
  X(ERR_INVALID_ARGUMENT, -1, "invalid argument")                              \
  X(ERR_OUT_OF_MEMORY, -2, "out of memory")                                    \
  X(ERR_UNSUPPORTED, -3, "operation or dtype not supported by this device")    \
  X(ERR_UNAVAILABLE, -4, "backend or device unavailable")                       \
  X(ERR_INCOMPATIBLE, -5, "incompatible plugin")                               \
  X(ERR_DEVICE_LOST, -6, "device lost")                                        \
  X(ERR_INTERNAL, -7, "internal error")                                        \
  X(ERR_NOT_FOUND, -8, "not found")                                            \
  X(ERR_UNIMPLEMENTED, -9, "not implemented")                                  \
  X(ERR_TIMEOUT, -10, "timed out")                                             \
  X(ERR_BUSY, -11, "resource busy")

typedef enum bp_status {
#define BP__STATUS_ENUM(name, value, msg) BP_##name = value,
  BP_STATUS_MAP(BP__STATUS_ENUM)
#undef BP__STATUS_ENUM
} bp_status_t;

/* ---------------------------------------------------------------------------
 * Data types. The value is also the bit index in capability masks.
 */
typedef enum bp_dtype {
  BP_F32 = 0,
  BP_F16 = 1,
  BP_BF16 = 2,
  BP_F64 = 3,
  BP_I32 = 4,
  BP_I64 = 5,
  BP_U8 = 6,
  /* ABI 1.5: quantized compute (docs/ops.md, "Quantized types"). */
  BP_I8 = 7,          /* int8; GEMM accumulates in int32 */
  BP_FP8_E4M3 = 8,    /* OCP FP8 E4M3 (storage; no inf, NaN = S.1111.111) */
  BP_FP8_E5M2 = 9,    /* OCP FP8 E5M2 (storage; IEEE-like inf and NaN) */
  BP_Q8_0 = 10,       /* blocks of 32 weights: f16 scale, 32 x int8 (34 B) */
  BP_Q4_0 = 11,       /* blocks of 32 weights: f16 scale, 16 B of nibbles */
  BP_DTYPE_COUNT = 12
} bp_dtype_t;

/* Weights per block of a block-quantized dtype (BP_Q8_0, BP_Q4_0). */
#define BP_QUANT_BLOCK 32
#define BP_DTYPE_IS_BLOCK(dt) ((dt) == BP_Q8_0 || (dt) == BP_Q4_0)

#define BP_DTYPE_BIT(dt) (1u << (unsigned)(dt))
#define BP_DTYPES_FLOAT                                                        \
  (BP_DTYPE_BIT(BP_F32) | BP_DTYPE_BIT(BP_F16) | BP_DTYPE_BIT(BP_BF16) |       \
   BP_DTYPE_BIT(BP_F64))
#define BP_DTYPES_INT                                                          \
  (BP_DTYPE_BIT(BP_I32) | BP_DTYPE_BIT(BP_I64) | BP_DTYPE_BIT(BP_U8))
#define BP_DTYPES_FP8 (BP_DTYPE_BIT(BP_FP8_E4M3) | BP_DTYPE_BIT(BP_FP8_E5M2))
#define BP_DTYPES_BLOCK (BP_DTYPE_BIT(BP_Q8_0) | BP_DTYPE_BIT(BP_Q4_0))

/* ---------------------------------------------------------------------------
 * The op table: every op family, named once. Adding an op is one line here
 * (appended, with the next value: the values are ABI) plus its argument
 * struct below and its kernels. From this table come the bp_op_t enum, the
 * descriptor's op slots (in this order), bp_op_name, the core's dispatch,
 * argument sizes and graph capture, and each plugin's list of op entry
 * points. Columns:
 *   ENUM     the bp_op_t value's name, after BP_OP_
 *   name     the descriptor slot and the op's name (bp_op_name)
 *   args_t   the argument struct the slot takes
 *   value    the enum value, also the index into op_dtypes[]
 *   capture  how a graph records the call: VALUE copies the struct (its
 *            tensors are the fields listed next); ARRAYS also deep-copies
 *            the arrays of tensors it points at (Adam's groups)
 *   tensors  the struct's tensor fields, which a graph rebinds
 */
#define BP_OP_TABLE(X)                                                         \
  X(GEMM, gemm, bp_gemm_args_t, 0, VALUE, (a, b, bias, c))                     \
  X(GEMV, gemv, bp_gemv_args_t, 1, VALUE, (a, x, y))                           \
  X(CONV2D, conv2d, bp_conv2d_args_t, 2, VALUE, (x, w, bias, y))               \
  X(POOL2D, pool2d, bp_pool2d_args_t, 3, VALUE, (x, y))                        \
  X(BATCH_NORM, batch_norm, bp_batch_norm_args_t, 4, VALUE,                    \
    (x, mean, var, scale, bias, y))                                            \
  X(LAYER_NORM, layer_norm, bp_norm_args_t, 5, VALUE, (x, gamma, beta, y))     \
  X(RMS_NORM, rms_norm, bp_norm_args_t, 6, VALUE, (x, gamma, beta, y))         \
  X(SOFTMAX, softmax, bp_softmax_args_t, 7, VALUE, (x, y))                     \
  X(ATTENTION, attention, bp_attention_args_t, 8, VALUE,                      \
    (q, k, v, kv_lens, bias, alibi_slopes, out))                               \
  X(ADAM, adam, bp_adam_args_t, 9, ARRAYS, ())                                 \
  X(UNARY, unary, bp_unary_args_t, 10, VALUE, (x, y))                          \
  X(BINARY, binary, bp_binary_args_t, 11, VALUE, (a, b, y))                    \
  X(REDUCE, reduce, bp_reduce_args_t, 12, VALUE, (x, y))                       \
  X(FILL, fill, bp_fill_args_t, 13, VALUE, (y))                                \
  X(COPY, copy, bp_copy_args_t, 14, VALUE, (x, y))                             \
  X(CAST, cast, bp_copy_args_t, 15, VALUE, (x, y))                             \
  X(RANDOM, random, bp_random_args_t, 16, VALUE, (y))

/* Op families added in ABI 1.5. Their descriptor slots come after every
 * field of ABI 1.4 (plugin-api.h), so an older plugin's descriptor, which
 * the loader zero-extends, has them NULL: "not implemented". The model ops
 * first, then the quantized ones (BP_OP_TABLE_QUANT); the values continue
 * BP_OP_TABLE's without a gap. */
#define BP_OP_TABLE_MODEL(X)                                                   \
  X(GATHER, gather, bp_gather_args_t, 17, VALUE, (table, indices, y))          \
  X(ARANGE, arange, bp_arange_args_t, 18, VALUE, (y))                          \
  X(BINARY_SCALAR, binary_scalar, bp_binary_scalar_args_t, 19, VALUE, (a, y))  \
  X(GLU, glu, bp_glu_args_t, 20, VALUE, (gate, up, y))                         \
  X(ROPE, rope, bp_rope_args_t, 21, VALUE, (x, positions, y))
#define BP_OP_TABLE_QUANT(X)                                                   \
  X(QUANTIZE, quantize, bp_quantize_args_t, 22, VALUE, (x, scale, y))          \
  X(DEQUANTIZE, dequantize, bp_quantize_args_t, 23, VALUE, (x, scale, y))      \
  X(QGEMM, qgemm, bp_qgemm_args_t, 24, VALUE, (a, b, scale_a, scale_b, c))     \
  X(QMATMUL, qmatmul, bp_qmatmul_args_t, 25, VALUE, (a, w, y))
#define BP_OP_TABLE_1_5(X) BP_OP_TABLE_MODEL(X) BP_OP_TABLE_QUANT(X)

/* Every op family, in value order: what the core and the plugins iterate. */
#define BP_OP_TABLE_ALL(X) BP_OP_TABLE(X) BP_OP_TABLE_1_5(X)

/* Op families: the index into a device's capability table. GEMM covers
 * gemm and strided batched gemm, SOFTMAX softmax and log-softmax.
 * BP_OP_TABLE_SIZE leaves room for families appended later. */
typedef enum bp_op {
#define BP__OP_ENUM(E, name, args_t, value, capture, tensors) BP_OP_##E = value,
  BP_OP_TABLE_ALL(BP__OP_ENUM)
#undef BP__OP_ENUM
#define BP__OP_PLUS_ONE(E, name, args_t, value, capture, tensors) +1
  BP_OP_COUNT = 0 BP_OP_TABLE_ALL(BP__OP_PLUS_ONE)
#undef BP__OP_PLUS_ONE
} bp_op_t;
#define BP_OP_TABLE_SIZE 64

typedef enum bp_unary_op {
  BP_UNARY_NEG = 0,
  BP_UNARY_ABS,
  BP_UNARY_EXP,
  BP_UNARY_LOG,
  BP_UNARY_SQRT,
  BP_UNARY_RSQRT,
  BP_UNARY_RELU,
  BP_UNARY_GELU, /* exact: x * 0.5 * (1 + erf(x / sqrt(2))) */
  BP_UNARY_SILU,
  BP_UNARY_SIGMOID,
  BP_UNARY_TANH,
  BP_UNARY_SIN,
  BP_UNARY_COS,
  /* ABI 1.5: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))); a device
   * runs it when op_features[BP_OP_UNARY] has BP_FEATURE_UNARY_GELU_TANH */
  BP_UNARY_GELU_TANH,
  BP_UNARY_COUNT
} bp_unary_op_t;

typedef enum bp_binary_op {
  BP_BINARY_ADD = 0,
  BP_BINARY_SUB,
  BP_BINARY_MUL,
  BP_BINARY_DIV,
  BP_BINARY_MAX, /* NaN-propagating */
  BP_BINARY_MIN, /* NaN-propagating */
  BP_BINARY_POW,
  BP_BINARY_COUNT
} bp_binary_op_t;

typedef enum bp_reduce_op {
  BP_REDUCE_SUM = 0,
  BP_REDUCE_MEAN,
  BP_REDUCE_MAX,  /* NaN-propagating */
  BP_REDUCE_MIN,  /* NaN-propagating */
  BP_REDUCE_PROD,
  BP_REDUCE_VAR,  /* population variance (divides by n) */
  BP_REDUCE_ARGMAX, /* first index of the maximum; output i32 or i64 */
  BP_REDUCE_COUNT
} bp_reduce_op_t;

/* How a collective combines the ranks' values (bp_comm_all_reduce and the
 * comm plugin ABI, comm-api.h). MAX and MIN follow the comm library's
 * semantics for NaN; AVG is the sum divided by the number of ranks (for
 * integer dtypes truncated toward zero). f16 and bf16 reduce in f32. */
typedef enum bp_comm_reduce_op {
  BP_COMM_SUM = 0,
  BP_COMM_PROD = 1,
  BP_COMM_MAX = 2,
  BP_COMM_MIN = 3,
  BP_COMM_AVG = 4,
  BP_COMM_REDUCE_COUNT = 5
} bp_comm_reduce_op_t;

/* bp_glu (ABI 1.5): the activation applied to the gate. */
typedef enum bp_glu_kind {
  BP_GLU_SWIGLU = 0,    /* silu(gate) * up (Llama) */
  BP_GLU_GEGLU = 1,     /* exact gelu(gate) * up */
  BP_GLU_GEGLU_TANH = 2, /* tanh-approximate gelu(gate) * up */
  BP_GLU_REGLU = 3,     /* relu(gate) * up */
  BP_GLU_COUNT = 4
} bp_glu_kind_t;

/* bp_rope (ABI 1.5): which features form a rotating pair i. */
typedef enum bp_rope_mode {
  BP_ROPE_HALF = 0,        /* (i, i + rotary_dim / 2): GPT-NeoX, Llama (HF) */
  BP_ROPE_INTERLEAVED = 1, /* (2i, 2i + 1): GPT-J, Llama (Meta) */
  BP_ROPE_MODE_COUNT = 2
} bp_rope_mode_t;

typedef enum bp_pool_kind { BP_POOL_MAX = 0, BP_POOL_AVG = 1 } bp_pool_kind_t;
typedef enum bp_random_dist {
  BP_RANDOM_UNIFORM = 0, /* [a, b) */
  BP_RANDOM_NORMAL = 1   /* mean a, standard deviation b */
} bp_random_dist_t;

typedef enum bp_device_kind {
  BP_DEVICE_DISCRETE_GPU = 0,
  BP_DEVICE_INTEGRATED_GPU = 1,
  BP_DEVICE_CPU = 2,
  BP_DEVICE_SOFTWARE = 3, /* emulation: llvmpipe, PoCL, a reference device */
  BP_DEVICE_OTHER = 4
} bp_device_kind_t;

/* ---------------------------------------------------------------------------
 * Device info: one record per device, filled by probe.
 */
typedef struct bp_device_info {
  uint32_t struct_size;
  char name[128];
  char vendor[64];
  char driver_version[64];
  char identity[64];   /* stable id: "pci:0000:01:00.0" or "uuid:..." or "" */
  bp_device_kind_t kind;
  int32_t score_hint;  /* higher is better, within a kind */
  uint64_t memory_bytes;
  uint32_t compute_units;
  uint32_t flags;      /* BP_DEVICE_FLAG_* */
  double peak_gflops;  /* f32 FMA peak estimate, 0 when unknown */
  double bandwidth_gbs; /* memory bandwidth estimate, 0 when unknown */
  /* Per op family: bitmask of bp_dtype_t that run natively (BP_DTYPE_BIT). */
  uint32_t op_dtypes[BP_OP_TABLE_SIZE];
  char description[256]; /* free text: ISA, driver details */
  /* fields below: ABI 1.1 */
  uint32_t kernel_formats; /* BP_KERNEL_FORMAT_BIT(f) of custom kernels taken */
  /* fields below: ABI 1.3 */
  /* The DLPack DLDeviceType its device pointers belong to (kDLCUDA = 2,
   * kDLROCM = 10, ...), with the device's backend index as the DLPack
   * device id; 0 when they cannot be shared, or when they are host
   * pointers (BP_DEVICE_FLAG_HOST_MEMORY already says so: kDLCPU). */
  int32_t dlpack_device_type;
  /* fields below: ABI 1.5 */
  /* Per op family: the optional parts of its arguments the device runs
   * (BP_FEATURE_* bits, per family). A call that uses a part its device
   * does not claim is refused like an unclaimed dtype (and falls back or
   * is composed by the core where the op says so). */
  uint32_t op_features[BP_OP_TABLE_SIZE];
} bp_device_info_t;

/* op_features bits, by op family (ABI 1.5). */
/* BP_OP_GEMM: the epilogue of bp_gemm_args_t, a bias tensor and an
 * activation (without them the core composes the epilogue from binary and
 * unary ops on the same stream). */
#define BP_FEATURE_GEMM_BIAS 0x1u
#define BP_FEATURE_GEMM_ACT 0x2u
/* BP_OP_ATTENTION: the masks of bp_attention_args_t beyond causal. */
#define BP_FEATURE_ATTENTION_KV_LENS 0x1u
#define BP_FEATURE_ATTENTION_WINDOW 0x2u
#define BP_FEATURE_ATTENTION_BIAS 0x4u
#define BP_FEATURE_ATTENTION_ALIBI 0x8u
/* BP_OP_UNARY: the device runs BP_UNARY_GELU_TANH (an older plugin's
 * unary kernels do not know the op). */
#define BP_FEATURE_UNARY_GELU_TANH 0x1u
/* BP_OP_CAST: bp_copy_args_t.cast_flags' BP_CAST_SATURATE (fp8 targets). */
#define BP_FEATURE_CAST_SATURATE 0x1u

/* Cast flags (bp_cast_ex, bp_copy_args_t.cast_flags; ABI 1.5). SATURATE:
 * an fp8 target clamps values beyond its largest finite value, infinities
 * included, to that value with their sign (NaN stays NaN). */
#define BP_CAST_SATURATE 0x1u

#define BP_DEVICE_FLAG_REFERENCE 0x1u /* a plain reference implementation */
#define BP_DEVICE_FLAG_HOST_MEMORY 0x2u /* device pointers are host pointers */
#define BP_DEVICE_FLAG_UNIFIED 0x4u

/* Options the application passes when opening a device. */
typedef enum bp_isa_level {
  BP_ISA_BEST = 0,
  BP_ISA_SCALAR = 1,
  BP_ISA_AVX2 = 2,
  BP_ISA_AVX512 = 3
} bp_isa_level_t;

/* ---------------------------------------------------------------------------
 * Custom kernels (ABI 1.1): code in the form a backend takes, launched over a
 * grid with an argument array.
 */
typedef enum bp_kernel_format {
  BP_KERNEL_SPIRV = 0,     /* Vulkan: SPIR-V words, entry point name */
  BP_KERNEL_GLSL = 1,      /* Vulkan: GLSL compute source (via libshaderc) */
  BP_KERNEL_OPENCL_C = 2,  /* OpenCL C source, kernel name */
  BP_KERNEL_PTX = 3,       /* CUDA: PTX text, .entry name */
  BP_KERNEL_HIP = 4,       /* ROCm: HIP source through hiprtc */
  BP_KERNEL_C_SHARED_OBJECT = 5 /* CPU: path of a .so, function name */
} bp_kernel_format_t;
#define BP_KERNEL_FORMAT_BIT(f) (1u << (unsigned)(f))

typedef enum bp_kernel_arg_kind {
  BP_ARG_BUFFER = 0, /* device pointer + byte offset */
  BP_ARG_I32, BP_ARG_U32, BP_ARG_I64, BP_ARG_U64, BP_ARG_F32, BP_ARG_F64
} bp_kernel_arg_kind_t;

/* ---------------------------------------------------------------------------
 * Log levels, most severe first: a line is shown when its level is at most
 * the level set (bp_log_set_level, BACKPLANE_DEBUG). Plugins log through the
 * host services' log; applications pick the level and a handler. */
typedef enum bp_log_level {
  BP_LOG_ERROR = 0,
  BP_LOG_WARN = 1,
  BP_LOG_INFO = 2,
  BP_LOG_DEBUG = 3
} bp_log_level_t;

#ifdef __cplusplus
}
#endif
#endif /* BACKPLANE_TYPES_H */
