# plugins/cpu/fast.mk — per-object ISA flags for the fast kernels. Each file
# named here holds code for one ISA and is only called after run-time CPUID
# checks, so the rest of the plugin stays baseline x86-64. Included by
# plugin.mk after its `$(CPU_OBJS): CFLAGS_EXTRA = $(PLUGIN_CFLAGS)`; these
# later target-specific assignments to the same variable replace it.
CPU_FAST_DIR := $(B)/obj/plugins/cpu/fast
CPU_FAST_AVX2 := -mavx2 -mfma -mf16c
CPU_FAST_AVX512 := $(CPU_FAST_AVX2) -mavx512f -mavx512bw -mavx512vl -mavx512dq

$(CPU_FAST_DIR)/gemm/gemm_avx2.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX2)
$(CPU_FAST_DIR)/gemm/gemm_avx512.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512)
$(CPU_FAST_DIR)/gemm/gemm_amx.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) \
  -mamx-tile -mamx-bf16
# bf16 / f16 with a few rows of C, B widened in registers (F16C + AVX-512)
$(CPU_FAST_DIR)/gemm/gemm_skinny_lowp.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512)
# bf16 with a few rows of C on AMX tiles, W interleaved into VNNI tiles in L1
$(CPU_FAST_DIR)/gemm/gemm_skinny_amx.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) \
  -mamx-tile -mamx-bf16
# bf16 block product of the AMX driver on VDPBF16PS, for CPUs without AMX
$(CPU_FAST_DIR)/gemm/gemm_dpbf16.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) -mavx512bf16
# bf16 packers of the AMX driver (AVX-512 only, no tiles)
$(CPU_FAST_DIR)/gemm/gemm_amx_pack.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512)
# f16 split into bf16 pairs for the AMX tiles (F16C + AVX-512 only, no tiles)
$(CPU_FAST_DIR)/gemm/gemm_amx_f16.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512)
$(CPU_FAST_DIR)/attention/attention_avx512.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512)
$(CPU_FAST_DIR)/attention/attention_decode.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512)
$(CPU_FAST_DIR)/attention/attention_avx2.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX2)
$(CPU_FAST_DIR)/attention/attention_amx.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) \
  -mavx512bf16 -mamx-tile -mamx-bf16
$(CPU_FAST_DIR)/attention/attention_amx_f32.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) \
  -mavx512bf16 -mamx-tile -mamx-bf16
# Row kernels of the memory-bound ops and depthwise conv (fast/vec_kern.h).
$(CPU_FAST_DIR)/vec_avx2.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX2)
$(CPU_FAST_DIR)/vec_avx512.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512)
$(CPU_FAST_DIR)/conv/conv2d_dw_avx2.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX2)
$(CPU_FAST_DIR)/conv/conv2d_dw_avx512.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512)
$(CPU_FAST_DIR)/conv/conv2d_ukr_avx2.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX2)
# f32 conv2d's direct route: output channels along the vector (AVX-512).
# In the fuzz build (clang, -fsanitize=fuzzer-no-link) the sanitizers are
# left out of this file: clang instrumenting its unrolled register tiles
# ran for over twenty minutes where the plain compile takes seconds. The
# fuzz harness reaches it only through conv2d's arguments, which the rest
# of the plugin (instrumented) checks and packs before the kernel runs.
CPU_FAST_FUZZ_NOSAN := $(if $(findstring fuzzer-no-link,$(EXTRA_CFLAGS)),-fno-sanitize=address -fno-sanitize=undefined)
$(CPU_FAST_DIR)/conv/conv2d_direct_avx512.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) $(CPU_FAST_FUZZ_NOSAN)
# f32 3x3 conv2d's Winograd transforms (fast/conv/conv2d_winograd_kern.h).
$(CPU_FAST_DIR)/conv/conv2d_winograd_avx512.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512)
$(CPU_FAST_DIR)/conv/conv2d_winograd_avx2.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX2)
# bf16 conv2d as an implicit GEMM on AMX tiles (stride 1).
$(CPU_FAST_DIR)/conv/conv2d_amx.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) \
  -mavx512bf16 -mamx-tile -mamx-bf16
$(CPU_FAST_DIR)/conv/conv2d_amx_pairs.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) \
  -mavx512bf16 -mamx-tile -mamx-bf16
# Vectorised f32 panel packing (fast/gemm/gemm_pack_*.c).
$(CPU_FAST_DIR)/gemm/gemm_pack_avx2.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX2)
$(CPU_FAST_DIR)/gemm/gemm_pack_avx512.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512)
# int8 GEMM on AVX512-VNNI (fast/quant/, chosen by CPUID at run time).
$(CPU_FAST_DIR)/quant/qgemm_vnni.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) -mavx512vnni
$(CPU_FAST_DIR)/quant/qmatmul_avx512.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512)
# qmatmul's int8-activation tiles: VNNI, and AVX2 without it (chosen by CPUID).
$(CPU_FAST_DIR)/quant/qmatmul_vnni.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) -mavx512vnni
$(CPU_FAST_DIR)/quant/qmatmul_avx2.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX2)
$(CPU_FAST_DIR)/quant/qmatmul_amx.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) -mamx-tile -mamx-int8
$(CPU_FAST_DIR)/quant/qgemm_avx2.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX2)
# int8 GEMM on AMX-INT8 tiles, its packers and epilogue (AVX-512 only).
$(CPU_FAST_DIR)/quant/qgemm_amx.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) \
  -mamx-tile -mamx-int8
$(CPU_FAST_DIR)/quant/qgemm_amx_pack.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512)
# fp8 GEMM: fp8 widened to bf16 into the same driver's tiles (AMX-BF16).
$(CPU_FAST_DIR)/quant/qgemm_fp8.o: CFLAGS_EXTRA = $(PLUGIN_CFLAGS) $(CPU_FAST_AVX512) \
  -mamx-tile -mamx-bf16
