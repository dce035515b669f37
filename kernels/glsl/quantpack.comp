#version 460
// quantpack.comp — packs an int8 matrix view (any strides, a transpose
// included) into k-contiguous uint words for quantgemm.comp: word w of row
// r of batch b holds elements 4w .. 4w + 3 along k (byte j = element
// 4w + j, little-endian), zero past k. Variants: quantpack_s8 (uint8_t
// loads), quantpack_w (bytes widened from their aligned words). With
// kmajor set (kw a multiple of 4), rows are interleaved by 16-byte texels
// instead: texel (b, w / 4, r) at ((b * kw / 4 + w / 4) * rows + r), so
// that neighbouring rows' texels, which neighbouring invocations of
// quantgemm.comp's texel variants read together, are adjacent.
#include "common.glsl"
#include "quant.inc"

layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 4) writeonly buffer Words { uint v[]; };

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t src, dst;
  int n, rows, k, kw; // n = batches * rows * kw words
  int sb, sr, sl, kmajor; // element (byte) strides of batch, row, k
};
layout(push_constant) uniform PC { Params p; };

void main() {
  Words dst = Words(p.dst);
  int stride = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
  for (int i = int(gl_GlobalInvocationID.x); i < p.n; i += stride) {
    int w = i % p.kw, row = i / p.kw;
    int r = row % p.rows, b = row / p.rows;
    int64_t base = int64_t(b) * p.sb + int64_t(r) * p.sr;
    uint word = 0u;
    for (int j = 0; j < 4; j++) {
      int l = 4 * w + j;
      if (l < p.k) word |= q_ld8(p.src + uint64_t(base + int64_t(l) * p.sl)) << (8 * j);
    }
    int o = p.kmajor != 0 ? ((b * (p.kw >> 2) + (w >> 2)) * p.rows + r) * 4 + (w & 3) : i;
    dst.v[o] = word;
  }
}
