"""ctypes declarations of libbackplane.so: structures and function signatures.

Mirrors core/backplane.h and plugin-api.h. Only this module knows the C
layout; the rest of the package works with Python objects.
"""
import ctypes
import ctypes.util
import os

MAX_RANK = 8
OP_TABLE_SIZE = 64

DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "f64": 3, "i32": 4, "i64": 5, "u8": 6,
          "i8": 7, "fp8_e4m3": 8, "fp8_e5m2": 9, "q8_0": 10, "q4_0": 11}
DTYPE_SIZES = {0: 4, 1: 2, 2: 2, 3: 8, 4: 4, 5: 8, 6: 1, 7: 1, 8: 1, 9: 1, 10: 34, 11: 18}
# Block dtypes (docs/ops.md "Quantized types"): DTYPE_SIZES is one block's bytes.
BLOCK_WEIGHTS = {10: 32, 11: 32}
CAST_SATURATE = 0x1  # bp_cast_ex flag (backplane_types.h)
OPS = ["gemm", "gemv", "conv2d", "pool2d", "batch_norm", "layer_norm", "rms_norm", "softmax",
       "attention", "adam", "unary", "binary", "reduce", "fill", "copy", "cast", "random",
       "gather", "arange", "binary_scalar", "glu", "rope",
       "quantize", "dequantize", "qgemm", "qmatmul"]
UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "relu", "gelu", "silu", "sigmoid", "tanh",
         "sin", "cos", "gelu_tanh"]
BINARY = ["add", "sub", "mul", "div", "max", "min", "pow"]
REDUCE = ["sum", "mean", "max", "min", "prod", "var", "argmax"]
ROW_MAJOR, COL_MAJOR, NO_TRANS, TRANS = 101, 102, 111, 112
KINDS = ["discrete-gpu", "integrated-gpu", "cpu", "software", "other"]


class Tensor(ctypes.Structure):
    _fields_ = [("buffer", ctypes.c_void_p), ("offset", ctypes.c_uint64), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int32), ("shape", ctypes.c_int64 * MAX_RANK),
                ("strides", ctypes.c_int64 * MAX_RANK)]


class DeviceInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("name", ctypes.c_char * 128),
                ("vendor", ctypes.c_char * 64), ("driver_version", ctypes.c_char * 64),
                ("identity", ctypes.c_char * 64), ("kind", ctypes.c_int), ("score_hint", ctypes.c_int32),
                ("memory_bytes", ctypes.c_uint64), ("compute_units", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("peak_gflops", ctypes.c_double),
                ("bandwidth_gbs", ctypes.c_double), ("op_dtypes", ctypes.c_uint32 * OP_TABLE_SIZE),
                ("description", ctypes.c_char * 256), ("kernel_formats", ctypes.c_uint32),
                ("dlpack_device_type", ctypes.c_int32), ("op_features", ctypes.c_uint32 * OP_TABLE_SIZE)]


class DeviceEntry(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("rank", ctypes.c_uint32),
                ("backend", ctypes.c_char * 64), ("backend_index", ctypes.c_uint32),
                ("info", DeviceInfo), ("numa_node", ctypes.c_int32), ("local_cpus", ctypes.c_char * 64)]


class PluginReport(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("path", ctypes.c_char * 1024),
                ("name", ctypes.c_char * 64), ("version", ctypes.c_char * 64), ("loaded", ctypes.c_bool),
                ("stage", ctypes.c_int), ("status", ctypes.c_int), ("reason", ctypes.c_char * 512),
                ("plugin_abi_major", ctypes.c_uint16), ("plugin_abi_minor", ctypes.c_uint16),
                ("loader_abi_major", ctypes.c_uint16), ("loader_abi_minor", ctypes.c_uint16),
                ("device_count", ctypes.c_uint32)]


class ContextOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("plugin_dir", ctypes.c_char_p),
                ("isolate_probe", ctypes.c_bool), ("only_plugin_dir", ctypes.c_bool),
                ("probe_timeout_s", ctypes.c_uint32), ("in_process_probe", ctypes.c_bool)]


class Conv2dParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32)] + [
        (n, ctypes.c_int32) for n in ("stride_h", "stride_w", "pad_h", "pad_w", "dilation_h",
                                      "dilation_w", "groups")]


class Pool2dParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("kind", ctypes.c_int)] + [
        (n, ctypes.c_int32) for n in ("kernel_h", "kernel_w", "stride_h", "stride_w", "pad_h",
                                      "pad_w")] + [("count_include_pad", ctypes.c_bool)]


class GemmEpilogue(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("bias", ctypes.POINTER(Tensor)), ("activate", ctypes.c_bool),
                ("activation", ctypes.c_int)]


class AttentionOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("scale", ctypes.c_double), ("causal", ctypes.c_bool),
                ("window", ctypes.c_int32), ("kv_lens", ctypes.POINTER(Tensor)), ("bias", ctypes.POINTER(Tensor)),
                ("alibi", ctypes.c_bool), ("alibi_slopes", ctypes.POINTER(Tensor))]


class AdamParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32)] + [
        (n, ctypes.c_double) for n in ("lr", "beta1", "beta2", "eps", "weight_decay")] + [
        ("step", ctypes.c_int64), ("adamw", ctypes.c_bool)]


class MemoryStats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32)] + [
        (n, ctypes.c_uint64) for n in ("in_use_bytes", "reserved_bytes", "cached_bytes",
                                       "peak_in_use_bytes", "largest_free_block", "alloc_count",
                                       "free_count", "cache_hits", "segment_count")] + [
        ("fragmentation", ctypes.c_double)]


class DeviceConfig(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("threads", ctypes.c_uint32), ("isa_max", ctypes.c_int),
                ("memory_limit", ctypes.c_uint64), ("allow_reduced_precision", ctypes.c_bool),
                ("pool_max_bytes", ctypes.c_uint64), ("pool_initial_bytes", ctypes.c_uint64),
                ("no_fallback", ctypes.c_bool)]


GROUP_SPLITS = ["gemm", "attention", "conv2d"]  # bp_group_split_t
FALLBACK_REASONS = ["dtype", "no_entry", "refused"]  # bp_fallback_reason_t


class GroupOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("allow_shared_hardware", ctypes.c_bool),
                ("split_shared_hardware", ctypes.c_bool), ("min_split_flops", ctypes.c_uint64),
                ("member_config", ctypes.POINTER(DeviceConfig))]


class GroupMember(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("entry", DeviceEntry), ("hardware", ctypes.c_uint32),
                ("gflops", ctypes.c_double * len(GROUP_SPLITS)), ("share", ctypes.c_double * len(GROUP_SPLITS)),
                ("ops_run", ctypes.c_uint64), ("slices_run", ctypes.c_uint64)]


class FallbackStat(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("op", ctypes.c_int), ("dtype", ctypes.c_int),
                ("reason", ctypes.c_int), ("reason_text", ctypes.c_char * 256), ("target", ctypes.c_char * 128),
                ("target_backend", ctypes.c_char * 64)] + [
        (n, ctypes.c_uint64) for n in ("count", "bytes_in", "bytes_out", "copy_ns", "total_ns")]


class LibraryNotFoundError(ImportError):
    """libbackplane.so could not be loaded; the message says where it looked."""


def _load():
    env = os.environ.get("BACKPLANE_LIBRARY")
    path = env or ctypes.util.find_library("backplane") or "libbackplane.so.0"
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        where = (f"BACKPLANE_LIBRARY={env!r}" if env else
                 "the system library path (BACKPLANE_LIBRARY is not set)")
        raise LibraryNotFoundError(
            f"backplane: cannot load the shared library from {where}: {e}. Set BACKPLANE_LIBRARY "
            "to the path of libbackplane.so (e.g. build/lib/libbackplane.so) or install it with "
            "'make install'") from e


lib = _load()

P = ctypes.c_void_p
PP = ctypes.POINTER(ctypes.c_void_p)
T = ctypes.POINTER(Tensor)
I64, U64, U32, I32, D = ctypes.c_int64, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int32, ctypes.c_double
_SIGNATURES = {
    "bp_last_error": ([], ctypes.c_char_p),
    "bp_status_name": ([ctypes.c_int], ctypes.c_char_p),
    "bp_version": ([], ctypes.c_char_p),
    "bp_context_create": ([ctypes.POINTER(ContextOptions), PP], ctypes.c_int),
    "bp_context_destroy": ([P], None),
    "bp_context_device_count": ([P, ctypes.POINTER(U32)], ctypes.c_int),
    "bp_context_device_entry": ([P, U32, ctypes.POINTER(DeviceEntry)], ctypes.c_int),
    "bp_context_plugin_count": ([P, ctypes.POINTER(U32)], ctypes.c_int),
    "bp_context_plugin_report": ([P, U32, ctypes.POINTER(PluginReport)], ctypes.c_int),
    "bp_device_open": ([P, ctypes.c_char_p, ctypes.POINTER(DeviceConfig), PP], ctypes.c_int),
    "bp_device_group_open": ([P, ctypes.c_char_p, ctypes.POINTER(GroupOptions), PP], ctypes.c_int),
    "bp_device_group_size": ([P, ctypes.POINTER(U32)], ctypes.c_int),
    "bp_device_group_info": ([P, U32, ctypes.POINTER(GroupMember)], ctypes.c_int),
    "bp_device_group_calibrate": ([P, ctypes.c_bool], ctypes.c_int),
    "bp_device_fallback_stats": ([P, ctypes.POINTER(FallbackStat), U32, ctypes.POINTER(U32)], ctypes.c_int),
    "bp_device_close": ([P], None),
    "bp_device_entry": ([P, ctypes.POINTER(DeviceEntry)], ctypes.c_int),
    "bp_device_supports": ([P, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_bool)], ctypes.c_int),
    "bp_gemm": ([P, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, I64, I64, I64, D,
                 P, U64, I64, P, U64, I64, D, P, U64, I64], ctypes.c_int),
    "bp_gemm_strided_batched": ([P, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, I64, I64,
                                 I64, D, P, U64, I64, I64, P, U64, I64, I64, D, P, U64, I64, I64,
                                 I64], ctypes.c_int),
    "bp_gemv": ([P, ctypes.c_int, ctypes.c_int, ctypes.c_int, I64, I64, D, P, U64, I64, P, U64, I64,
                 D, P, U64, I64], ctypes.c_int),
    "bp_device_synchronize": ([P], ctypes.c_int),
    "bp_device_memory_stats": ([P, ctypes.POINTER(MemoryStats)], ctypes.c_int),
    "bp_buffer_alloc": ([P, U64, PP], ctypes.c_int),
    "bp_buffer_free": ([P], None),
    "bp_buffer_write": ([P, U64, P, U64], ctypes.c_int),
    "bp_buffer_read": ([P, U64, P, U64], ctypes.c_int),
    "bp_buffer_copy": ([P, U64, P, U64, U64], ctypes.c_int),
    "bp_buffer_set_constant": ([P, ctypes.c_bool], ctypes.c_int),
    "bp_buffer_is_constant": ([P, ctypes.POINTER(ctypes.c_bool)], ctypes.c_int),
    "bp_stream_create": ([P, PP], ctypes.c_int),
    "bp_stream_destroy": ([P], None),
    "bp_stream_synchronize": ([P], ctypes.c_int),
    "bp_matmul": ([P, D, T, T, D, T], ctypes.c_int),
    "bp_matmul_ex": ([P, D, T, T, D, T, ctypes.POINTER(GemmEpilogue)], ctypes.c_int),
    "bp_conv2d": ([P, ctypes.POINTER(Conv2dParams), T, T, T, T], ctypes.c_int),
    "bp_pool2d": ([P, ctypes.POINTER(Pool2dParams), T, T], ctypes.c_int),
    "bp_batch_norm": ([P, T, T, T, T, T, D, T], ctypes.c_int),
    "bp_layer_norm": ([P, T, T, T, D, T], ctypes.c_int),
    "bp_rms_norm": ([P, T, T, D, T], ctypes.c_int),
    "bp_softmax": ([P, T, I32, ctypes.c_bool, T], ctypes.c_int),
    "bp_attention": ([P, T, T, T, D, ctypes.c_bool, T], ctypes.c_int),
    "bp_attention_ex": ([P, T, T, T, ctypes.POINTER(AttentionOptions), T], ctypes.c_int),
    "bp_adam": ([P, ctypes.POINTER(AdamParams), U32, T, T, T, T], ctypes.c_int),
    "bp_unary": ([P, ctypes.c_int, T, T], ctypes.c_int),
    "bp_binary": ([P, ctypes.c_int, T, T, T], ctypes.c_int),
    "bp_reduce": ([P, ctypes.c_int, T, I32, T], ctypes.c_int),
    "bp_fill": ([P, T, D], ctypes.c_int),
    "bp_copy": ([P, T, T], ctypes.c_int),
    "bp_cast": ([P, T, T], ctypes.c_int),
    "bp_cast_ex": ([P, T, T, U32], ctypes.c_int),
    "bp_random": ([P, ctypes.c_int, U64, U64, D, D, T], ctypes.c_int),
    "bp_tensor_to_dlpack": ([T, ctypes.c_bool, PP], ctypes.c_int),
    "bp_tensor_from_dlpack": ([P, P, ctypes.c_bool, T, PP], ctypes.c_int),
}
for _name, (_args, _res) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.argtypes = _args
    _fn.restype = _res
