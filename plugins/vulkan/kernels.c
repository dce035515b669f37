/*
 * kernels.c — custom kernels (ABI 1.1): application SPIR-V, or GLSL compiled
 * at run time through libshaderc (opened with dlopen, so the plugin has no
 * link-time dependency on it) or the glslc executable (kernels_glsl.c).
 *
 * The argument convention (docs/backend-vulkan.md, "Custom kernels"): the
 * arguments are packed, in signature order, into one push-constant block
 * laid out as std430 (GLSL's default for push constants): a buffer is the
 * uint64 device address of its first byte (offset applied; in GLSL a
 * GL_EXT_buffer_reference member), i32/u32/f32 take 4 bytes aligned to 4,
 * i64/u64/f64 8 bytes aligned to 8. grid is the number of workgroups;
 * block must equal the shader's local size, which is read from the SPIR-V;
 * a size given by specialization constants (local_size_x_id) is set to
 * block at launch instead, one pipeline per distinct block.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkb.h"

#define MAX_KERNEL_ARGS 64
#define MAX_BLOCKS 8 /* pipelines kept per kernel (one per block shape) */

struct bp_plugin_kernel {
  VkShaderModule module;
  VkPipelineLayout layout;
  char entry[128];
  uint32_t arg_count, push_size;
  bp_kernel_arg_kind_t kinds[MAX_KERNEL_ARGS];
  uint32_t offsets[MAX_KERNEL_ARGS];
  /* local size per dimension: fixed, or from a specialization constant */
  uint32_t local[3];
  int32_t spec_id[3]; /* -1: fixed */
  uint32_t nblocks;
  uint32_t blocks[MAX_BLOCKS][3];
  VkPipeline pipes[MAX_BLOCKS];
  pthread_mutex_t lock; /* guards blocks/pipes: streams launch concurrently */
};

/* ---- SPIR-V reflection ---------------------------------------------------*/

enum {
  SPV_MAGIC = 0x07230203u,
  OP_ENTRY_POINT = 15,
  OP_EXECUTION_MODE = 16,
  OP_CONSTANT = 43,
  OP_CONSTANT_COMPOSITE = 44,
  OP_SPEC_CONSTANT = 50,
  OP_SPEC_CONSTANT_COMPOSITE = 51,
  OP_DECORATE = 71,
  OP_EXECUTION_MODE_ID = 331,
  MODEL_GLCOMPUTE = 5,
  MODE_LOCAL_SIZE = 17,
  MODE_LOCAL_SIZE_ID = 38,
  DEC_SPEC_ID = 1,
  DEC_BUILTIN = 11,
  BUILTIN_WORKGROUP_SIZE = 25
};

/* Resolves constant id to a value (and its SpecId, if a spec constant). */
static bool spv_constant(const uint32_t *w, size_t n, uint32_t id, uint32_t *out_value,
                         int32_t *out_spec) {
  bool found = false;
  *out_spec = -1;
  for (size_t i = 5; i < n;) {
    uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
    if (len == 0 || i + len > n) return false;
    if ((op == OP_CONSTANT || op == OP_SPEC_CONSTANT) && len >= 4 && w[i + 2] == id) {
      *out_value = w[i + 3];
      found = true;
    }
    if (op == OP_DECORATE && len >= 4 && w[i + 1] == id && w[i + 2] == DEC_SPEC_ID)
      *out_spec = (int32_t)w[i + 3];
    i += len;
  }
  return found;
}

/* Finds the GLCompute entry point named entry and its local size. The
 * WorkgroupSize built-in, when present, overrides the execution mode (the
 * SPIR-V rule), and is how glslang expresses local_size_x_id. */
static bp_status_t spv_reflect(const uint32_t *w, size_t n, const char *entry,
                               bp_plugin_kernel_t *k) {
  uint32_t entry_id = UINT32_MAX, wg_id = UINT32_MAX, ids[3] = {0, 0, 0};
  bool have_size = false, size_by_id = false;
  for (size_t i = 5; i < n;) {
    uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
    if (len == 0 || i + len > n)
      return vkb_fail(BP_ERR_INVALID_ARGUMENT,
                      "vulkan: kernel_create: malformed SPIR-V at word %zu", i);
    if (op == OP_ENTRY_POINT && len >= 4 && w[i + 1] == MODEL_GLCOMPUTE &&
        strncmp((const char *)&w[i + 3], entry, 4 * (len - 3)) == 0 &&
        strlen(entry) < 4 * (len - 3))
      entry_id = w[i + 2];
    if (op == OP_DECORATE && len >= 4 && w[i + 2] == DEC_BUILTIN &&
        w[i + 3] == BUILTIN_WORKGROUP_SIZE)
      wg_id = w[i + 1];
    i += len;
  }
  if (entry_id == UINT32_MAX)
    return vkb_fail(BP_ERR_INVALID_ARGUMENT,
                    "vulkan: kernel_create: no GLCompute entry point named "
                    "'%s' in the SPIR-V",
                    entry);
  for (size_t i = 5; i < n; i += w[i] >> 16) {
    uint32_t op = w[i] & 0xffffu, len = w[i] >> 16;
    if ((op == OP_EXECUTION_MODE || op == OP_EXECUTION_MODE_ID) && len >= 6 &&
        w[i + 1] == entry_id && (w[i + 2] == MODE_LOCAL_SIZE || w[i + 2] == MODE_LOCAL_SIZE_ID)) {
      have_size = true;
      size_by_id = w[i + 2] == MODE_LOCAL_SIZE_ID;
      memcpy(ids, &w[i + 3], sizeof ids);
    }
    if (op == OP_SPEC_CONSTANT_COMPOSITE || op == OP_CONSTANT_COMPOSITE) {
      if (len >= 6 && w[i + 2] == wg_id) {
        have_size = true;
        size_by_id = true;
        memcpy(ids, &w[i + 3], sizeof ids);
      }
    }
  }
  if (!have_size)
    return vkb_fail(BP_ERR_INVALID_ARGUMENT,
                    "vulkan: kernel_create: entry point '%s' declares no "
                    "local size",
                    entry);
  for (int d = 0; d < 3; d++) {
    k->spec_id[d] = -1;
    k->local[d] = ids[d];
    if (size_by_id && !spv_constant(w, n, ids[d], &k->local[d], &k->spec_id[d]))
      return vkb_fail(BP_ERR_INVALID_ARGUMENT,
                      "vulkan: kernel_create: local size of '%s' is not a "
                      "constant",
                      entry);
  }
  return BP_OK;
}

/* ---- create, destroy, launch ---------------------------------------------*/

static uint32_t arg_size(bp_kernel_arg_kind_t kind) {
  return kind == BP_ARG_I32 || kind == BP_ARG_U32 || kind == BP_ARG_F32 ? 4 : 8;
}

void vkb_kernel_destroy(bp_plugin_device_t *device, bp_plugin_kernel_t *kernel) {
  vkb_device_t *d = (vkb_device_t *)device;
  if (!kernel) return;
  for (uint32_t i = 0; i < kernel->nblocks; i++)
    d->fn.vkDestroyPipeline(d->dev, kernel->pipes[i], NULL);
  if (kernel->layout) d->fn.vkDestroyPipelineLayout(d->dev, kernel->layout, NULL);
  if (kernel->module) d->fn.vkDestroyShaderModule(d->dev, kernel->module, NULL);
  pthread_mutex_destroy(&kernel->lock);
  free(kernel);
}

bp_status_t vkb_kernel_create(bp_plugin_device_t *device, const bp_kernel_source_t *src,
                              bp_plugin_kernel_t **out_kernel) {
  vkb_device_t *d = (vkb_device_t *)device;
  *out_kernel = NULL;
  uint32_t *compiled = NULL;
  const uint32_t *words = src->code;
  size_t count = (size_t)(src->code_size / 4);
  bp_status_t st = BP_OK;
  bp_plugin_kernel_t *k = calloc(1, sizeof *k);
  if (!k) return BP_ERR_OUT_OF_MEMORY;
  pthread_mutex_init(&k->lock, NULL);
  if (src->arg_count > MAX_KERNEL_ARGS || strlen(src->entry) >= sizeof k->entry) {
    st = vkb_fail(BP_ERR_INVALID_ARGUMENT,
                  "vulkan: kernel_create: more than %d arguments or an entry "
                  "name over %zu bytes",
                  MAX_KERNEL_ARGS, sizeof k->entry - 1);
    goto out;
  }
  if (src->format == BP_KERNEL_GLSL) {
    if ((st = vkb_glsl_compile(src, &compiled, &count)) != BP_OK) goto out;
    words = compiled;
  } else if (src->code_size % 4 || count < 5 || (uintptr_t)src->code % 4 || words[0] != SPV_MAGIC) {
    st = vkb_fail(BP_ERR_INVALID_ARGUMENT,
                  "vulkan: kernel_create: code is not SPIR-V (4-byte aligned "
                  "words starting with 0x07230203)");
    goto out;
  }
  /* GLSL's main() is the entry point whatever the application named. */
  snprintf(k->entry, sizeof k->entry, "%s", src->format == BP_KERNEL_GLSL ? "main" : src->entry);
  if ((st = spv_reflect(words, count, k->entry, k)) != BP_OK) goto out;
  /* Arguments: std430 push-constant layout, in signature order. */
  VkPhysicalDeviceProperties props;
  d->g->fn.vkGetPhysicalDeviceProperties(d->phys, &props);
  uint32_t off = 0;
  k->arg_count = src->arg_count;
  for (uint32_t i = 0; i < src->arg_count; i++) {
    uint32_t sz = arg_size(src->signature[i]);
    off = (off + sz - 1) / sz * sz;
    k->kinds[i] = src->signature[i];
    k->offsets[i] = off;
    off += sz;
  }
  k->push_size = (off + 3u) & ~3u;
  if (k->push_size > props.limits.maxPushConstantsSize) {
    st = vkb_fail(BP_ERR_UNSUPPORTED,
                  "vulkan: kernel_create: arguments take %u bytes; the "
                  "device's push constants hold %u",
                  k->push_size, props.limits.maxPushConstantsSize);
    goto out;
  }
  /* The range covers the device's whole push-constant space, so a shader
   * whose block is larger than the arguments still has a valid layout. */
  VkPushConstantRange pc = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
                            .size = props.limits.maxPushConstantsSize};
  VkPipelineLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                   .pushConstantRangeCount = 1,
                                   .pPushConstantRanges = &pc};
  VkShaderModuleCreateInfo mi = {
      .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = count * 4, .pCode = words};
  if ((st = vkb_check(d->fn.vkCreatePipelineLayout(d->dev, &li, NULL, &k->layout),
                      "vkCreatePipelineLayout")) != BP_OK ||
      (st = vkb_check(d->fn.vkCreateShaderModule(d->dev, &mi, NULL, &k->module),
                      "vkCreateShaderModule")) != BP_OK)
    goto out;
out:
  free(compiled);
  if (st != BP_OK) {
    vkb_kernel_destroy(device, k);
    return st;
  }
  *out_kernel = k;
  return BP_OK;
}

/* The pipeline for block, created on first use. Call with k->lock held. */
static bp_status_t kernel_pipeline_locked(vkb_device_t *d, bp_plugin_kernel_t *k,
                                          const uint32_t block[3], VkPipeline *out) {
  uint32_t spec[3], nspec = 0;
  VkSpecializationMapEntry map[3];
  for (int i = 0; i < 3; i++) {
    if (k->spec_id[i] < 0 && block[i] != k->local[i])
      return vkb_fail(BP_ERR_INVALID_ARGUMENT,
                      "vulkan: kernel_launch: block %ux%ux%u differs from "
                      "the shader's local size %ux%ux%u",
                      block[0], block[1], block[2], k->local[0], k->local[1], k->local[2]);
    if (k->spec_id[i] >= 0) {
      map[nspec] = (VkSpecializationMapEntry){
          .constantID = (uint32_t)k->spec_id[i], .offset = 4 * nspec, .size = 4};
      spec[nspec++] = block[i];
    }
  }
  for (uint32_t i = 0; i < k->nblocks; i++)
    if (memcmp(k->blocks[i], block, sizeof k->blocks[i]) == 0) {
      *out = k->pipes[i];
      return BP_OK;
    }
  if (k->nblocks == MAX_BLOCKS)
    return vkb_fail(BP_ERR_UNSUPPORTED,
                    "vulkan: kernel_launch: more than %d block shapes for "
                    "one kernel",
                    MAX_BLOCKS);
  VkSpecializationInfo si = {
      .mapEntryCount = nspec, .pMapEntries = map, .dataSize = 4 * nspec, .pData = spec};
  VkComputePipelineCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = k->module,
                .pName = k->entry,
                .pSpecializationInfo = nspec ? &si : NULL},
      .layout = k->layout};
  bp_status_t st = vkb_check(d->fn.vkCreateComputePipelines(d->dev, d->cache, 1, &ci, NULL, out),
                             "vkCreateComputePipelines (custom kernel)");
  if (st != BP_OK) return st;
  memcpy(k->blocks[k->nblocks], block, sizeof k->blocks[0]);
  k->pipes[k->nblocks++] = *out;
  return BP_OK;
}

static bp_status_t kernel_pipeline(vkb_device_t *d, bp_plugin_kernel_t *k, const uint32_t block[3],
                                   VkPipeline *out) {
  pthread_mutex_lock(&k->lock);
  bp_status_t st = kernel_pipeline_locked(d, k, block, out);
  pthread_mutex_unlock(&k->lock);
  return st;
}

static bp_status_t launch_record(vkb_stream_t *s, bp_plugin_kernel_t *k,
                                 const bp_launch_args_t *a) {
  vkb_device_t *d = s->d;
  uint64_t threads = (uint64_t)a->block[0] * a->block[1] * a->block[2];
  if (threads > d->caps.max_invocations || a->shared_bytes > d->caps.shared_bytes)
    return vkb_fail(BP_ERR_INVALID_ARGUMENT,
                    "vulkan: kernel_launch: block of %llu invocations or %u "
                    "shared bytes exceeds the device (%u, %u)",
                    (unsigned long long)threads, a->shared_bytes, d->caps.max_invocations,
                    d->caps.shared_bytes);
  for (int i = 0; i < 3; i++)
    if (a->grid[i] > d->caps.max_groups[i])
      return vkb_fail(BP_ERR_UNSUPPORTED,
                      "vulkan: kernel_launch: grid %ux%ux%u exceeds the "
                      "device's limit",
                      a->grid[0], a->grid[1], a->grid[2]);
  uint8_t push[256] = {0};
  if (k->push_size > sizeof push)
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: push block too large");
  for (uint32_t i = 0; i < k->arg_count; i++) {
    const bp_plugin_kernel_arg_t *x = &a->args[i];
    uint8_t *dst = push + k->offsets[i];
    if (x->kind == BP_ARG_BUFFER) {
      uint64_t addr = vkb_ptr(x->value.buffer.ptr)->addr + x->value.buffer.offset;
      memcpy(dst, &addr, 8);
    } else {
      memcpy(dst, &x->value, arg_size(x->kind));
    }
  }
  VkPipeline pipe;
  VkCommandBuffer cb;
  bp_status_t st = kernel_pipeline(d, k, a->block, &pipe);
  if (st == BP_OK) st = vkb_stream_cmd(s, &cb);
  if (st != BP_OK) return st;
  d->fn.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
  if (k->push_size)
    d->fn.vkCmdPushConstants(cb, k->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k->push_size, push);
  d->fn.vkCmdDispatch(cb, a->grid[0], a->grid[1], a->grid[2]);
  return vkb_stream_recorded(s);
}

bp_status_t vkb_kernel_launch(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                              bp_plugin_kernel_t *kernel, const bp_launch_args_t *args) {
  VKB_ON_STREAM(dev, stream, s, launch_record(s, kernel, args))
}
