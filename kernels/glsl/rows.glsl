// rows.glsl — shared by reduce.comp, softmax.comp and norm.comp: ops that
// work along one axis of x. Each workgroup takes one "row" (every index but
// the axis) at a time; its invocations split the axis and combine partial
// results through shared memory.
layout(local_size_x = 64) in;
#define WG 64

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Params {
  uint64_t x, y, g, b; // g, b: gamma / beta (0 when absent)
  int rows, len, rank, op; // rank: number of dims besides the axis
  int sx_axis, sy_axis, flags, pad;
  float eps, pad2;
  int shape[BP_MAX_RANK], sx[BP_MAX_RANK], sy[BP_MAX_RANK];
};
layout(push_constant) uniform PC { Params p; };

#include "wgreduce.glsl"

// Element offsets of row r in x and y.
void row_offsets(int r, out int ox, out int oy) {
  BP_ND_OFFSET(ox, r, p.rank, p.shape, p.sx);
  BP_ND_OFFSET(oy, r, p.rank, p.shape, p.sy);
}
