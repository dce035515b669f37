/*
 * kernels_pipeline.c — the plugin's own kernels: the embedded SPIR-V
 * (kernels/glsl/, compiled by plugin.mk), compute pipelines created once per
 * (kernel, specialization) and kept, a VkPipelineCache persisted under
 * $XDG_CACHE_HOME/backplane (or ~/.cache/backplane), and the dispatch
 * helper every op uses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vkb.h"
#include "vk_spirv.h" /* generated: vk_spv_<variant>[], VKB_SPIRV_TABLE */

typedef struct kernel {
  const char *name;
  const uint32_t *code;
  size_t size;
} kernel_t;

#define VKB__KERNEL(v) {#v, vk_spv_##v, sizeof vk_spv_##v},
static const kernel_t g_kernels[] = {VKB_SPIRV_TABLE(VKB__KERNEL){NULL, NULL, 0}};
#undef VKB__KERNEL

struct vkb_pipeline {
  const kernel_t *kernel;
  VkPipelineLayout layout;
  uint32_t spec[VKB_MAX_SPEC], nspec;
  VkPipeline pipe;
  struct vkb_pipeline *next;
};

static const kernel_t *find_kernel(const char *name) {
  for (const kernel_t *k = g_kernels; k->name; k++)
    if (strcmp(k->name, name) == 0) return k;
  return NULL;
}

bool vkb_kernel_present(const char *name) {
  return find_kernel(name) != NULL;
}

/* The cache file's path: one file per device model, driver version and
 * pipelineCacheUUID, so a driver update starts a fresh cache. */
static bool cache_path(vkb_device_t *d, char *out, size_t n, bool mkdirs) {
  const char *xdg = vkb_host && vkb_host->getenv ? vkb_host->getenv("XDG_CACHE_HOME") : NULL;
  const char *home = vkb_host && vkb_host->getenv ? vkb_host->getenv("HOME") : NULL;
  char dir[768];
  if (xdg && xdg[0])
    snprintf(dir, sizeof dir, "%s/backplane", xdg);
  else if (home && home[0])
    snprintf(dir, sizeof dir, "%s/.cache/backplane", home);
  else
    return false;
  if (mkdirs) {
    char parent[800];
    snprintf(parent, sizeof parent, "%.*s", (int)(strrchr(dir, '/') - dir), dir);
    mkdir(parent, 0700);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) return false;
  }
  VkPhysicalDeviceProperties p;
  d->g->fn.vkGetPhysicalDeviceProperties(d->phys, &p);
  int w =
      snprintf(out, n, "%s/vulkan-%04x-%04x-%08x-", dir, p.vendorID, p.deviceID, p.driverVersion);
  for (int i = 0; i < (int)VK_UUID_SIZE && w > 0 && (size_t)w + 8 < n; i++)
    w += snprintf(out + w, n - (size_t)w, "%02x", p.pipelineCacheUUID[i]);
  snprintf(out + w, n - (size_t)w, ".bin");
  return true;
}

static void *read_file(const char *path, size_t *out_size) {
  *out_size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  void *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n > 0 && n < (64l << 20) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) &&
        fread(buf, 1, (size_t)n, f) == (size_t)n)
      *out_size = (size_t)n;
  }
  fclose(f);
  if (!*out_size) {
    free(buf);
    buf = NULL;
  }
  return buf;
}

bp_status_t vkb_pipelines_init(vkb_device_t *d) {
  VkPushConstantRange pc = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = 16};
  VkPipelineLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                   .pushConstantRangeCount = 1,
                                   .pPushConstantRanges = &pc};
  bp_status_t st = vkb_check(d->fn.vkCreatePipelineLayout(d->dev, &li, NULL, &d->layout),
                             "vkCreatePipelineLayout");
  if (st != BP_OK) return st;
  if (d->caps.texel) {
    VkDescriptorSetLayoutBinding b[VKB_MAX_VIEWS];
    for (uint32_t i = 0; i < VKB_MAX_VIEWS; i++)
      b[i] =
          (VkDescriptorSetLayoutBinding){.binding = i,
                                         .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER,
                                         .descriptorCount = 1,
                                         .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo si = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
        .bindingCount = VKB_MAX_VIEWS,
        .pBindings = b};
    li.setLayoutCount = 1;
    li.pSetLayouts = &d->tex_set;
    if (vkb_check(d->fn.vkCreateDescriptorSetLayout(d->dev, &si, NULL, &d->tex_set),
                  "vkCreateDescriptorSetLayout") != BP_OK ||
        vkb_check(d->fn.vkCreatePipelineLayout(d->dev, &li, NULL, &d->tex_layout),
                  "vkCreatePipelineLayout") != BP_OK) {
      vkb_log(BP_LOG_WARN, "texel-buffer kernels unavailable: the generic "
                           "GEMM kernels run instead");
      d->caps.texel = false;
    }
  }
  /* A stale or foreign cache file is harmless: the driver checks its
   * header and ignores data it did not write. */
  char path[1024];
  size_t size = 0;
  void *data = cache_path(d, path, sizeof path, false) ? read_file(path, &size) : NULL;
  VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                  .initialDataSize = size,
                                  .pInitialData = data};
  VkResult r = d->fn.vkCreatePipelineCache(d->dev, &ci, NULL, &d->cache);
  if (r != VK_SUCCESS && data) {
    ci.initialDataSize = 0;
    ci.pInitialData = NULL;
    r = d->fn.vkCreatePipelineCache(d->dev, &ci, NULL, &d->cache);
  }
  free(data);
  if (r != VK_SUCCESS) d->cache = VK_NULL_HANDLE; /* pipelines still work, just uncached */
  vkb_log(BP_LOG_DEBUG, "pipeline cache %s: %zu bytes loaded", path, size);
  return BP_OK;
}

static void save_cache(vkb_device_t *d) {
  char path[1024], tmp[1040];
  size_t size = 0;
  if (!d->cache || !cache_path(d, path, sizeof path, true) ||
      d->fn.vkGetPipelineCacheData(d->dev, d->cache, &size, NULL) != VK_SUCCESS || size == 0)
    return;
  void *data = malloc(size);
  if (!data) return;
  /* Write then rename, so a concurrent reader never sees half a file. */
  snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
  FILE *f = NULL;
  if (d->fn.vkGetPipelineCacheData(d->dev, d->cache, &size, data) == VK_SUCCESS &&
      (f = fopen(tmp, "wb"))) {
    bool ok = fwrite(data, 1, size, f) == size;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) remove(tmp);
  }
  free(data);
}

void vkb_pipelines_destroy(vkb_device_t *d) {
  while (d->pipelines) {
    vkb_pipeline_t *p = d->pipelines;
    d->pipelines = p->next;
    d->fn.vkDestroyPipeline(d->dev, p->pipe, NULL);
    free(p);
  }
  if (d->cache) {
    save_cache(d);
    d->fn.vkDestroyPipelineCache(d->dev, d->cache, NULL);
  }
  if (d->layout) d->fn.vkDestroyPipelineLayout(d->dev, d->layout, NULL);
  if (d->tex_layout) d->fn.vkDestroyPipelineLayout(d->dev, d->tex_layout, NULL);
  if (d->tex_set) d->fn.vkDestroyDescriptorSetLayout(d->dev, d->tex_set, NULL);
}

static bp_status_t create_pipeline(vkb_device_t *d, vkb_pipeline_t *p) {
  VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                 .codeSize = p->kernel->size,
                                 .pCode = p->kernel->code};
  VkShaderModule mod;
  bp_status_t st =
      vkb_check(d->fn.vkCreateShaderModule(d->dev, &mi, NULL, &mod), "vkCreateShaderModule");
  if (st != BP_OK) return st;
  VkSpecializationMapEntry map[VKB_MAX_SPEC];
  for (uint32_t i = 0; i < p->nspec; i++)
    map[i] = (VkSpecializationMapEntry){.constantID = i, .offset = 4 * i, .size = 4};
  VkSpecializationInfo spec = {
      .mapEntryCount = p->nspec, .pMapEntries = map, .dataSize = 4 * p->nspec, .pData = p->spec};
  VkComputePipelineCreateInfo ci = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = mod,
                .pName = "main",
                .pSpecializationInfo = p->nspec ? &spec : NULL},
      .layout = p->layout};
  st = vkb_check(d->fn.vkCreateComputePipelines(d->dev, d->cache, 1, &ci, NULL, &p->pipe),
                 "vkCreateComputePipelines");
  d->fn.vkDestroyShaderModule(d->dev, mod, NULL);
  if (st != BP_OK)
    vkb_log(BP_LOG_ERROR, "pipeline for kernel %s failed; op unavailable", p->kernel->name);
  return st;
}

static bp_status_t get_pipeline(vkb_device_t *d, const char *name, const uint32_t *spec,
                                uint32_t nspec, VkPipelineLayout layout, VkPipeline *out) {
  const kernel_t *k = find_kernel(name);
  if (!k) return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: kernel %s not built into this plugin", name);
  bp_status_t st = BP_OK;
  pthread_mutex_lock(&d->pipe_lock);
  vkb_pipeline_t *p = d->pipelines;
  for (; p; p = p->next)
    if (p->kernel == k && p->layout == layout && p->nspec == nspec &&
        (nspec == 0 || memcmp(p->spec, spec, 4 * nspec) == 0))
      break;
  if (!p) {
    p = calloc(1, sizeof *p);
    if (!p) {
      st = BP_ERR_OUT_OF_MEMORY;
      goto out;
    }
    p->kernel = k;
    p->layout = layout;
    p->nspec = nspec;
    if (nspec) /* spec may be NULL when there are none */
      memcpy(p->spec, spec, 4 * nspec);
    if ((st = create_pipeline(d, p)) != BP_OK) {
      free(p);
      goto out;
    }
    p->next = d->pipelines;
    d->pipelines = p;
  }
  *out = p->pipe;
out:
  pthread_mutex_unlock(&d->pipe_lock);
  return st;
}

/* Records one dispatch with layout; views, when nviews > 0, are pushed as
 * set 0 (storage texel buffers at bindings 0..nviews). */
static bp_status_t dispatch(vkb_stream_t *s, const char *name, const uint32_t *spec, uint32_t nspec,
                            const void *params, uint32_t psize, const VkBufferView *views,
                            uint32_t nviews, uint32_t gx, uint32_t gy, uint32_t gz) {
  vkb_device_t *d = s->d;
  if (gx == 0 || gy == 0 || gz == 0) return BP_OK;
  if (gx > d->caps.max_groups[0] || gy > d->caps.max_groups[1] || gz > d->caps.max_groups[2])
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: %s: grid %ux%ux%u exceeds the device's limit",
                    name, gx, gy, gz);
  if (nviews && (!d->caps.texel || nviews > VKB_MAX_VIEWS))
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: %s needs storage texel buffers", name);
  VkPipelineLayout layout = nviews ? d->tex_layout : d->layout;
  VkPipeline pipe = VK_NULL_HANDLE;
  VkDeviceAddress addr = 0;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  bp_status_t st = get_pipeline(d, name, spec, nspec, layout, &pipe);
  if (st == BP_OK) st = vkb_stream_params(s, params, psize, &addr);
  if (st == BP_OK) st = vkb_stream_cmd(s, &cb);
  if (st != BP_OK) return st;
  d->fn.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
  if (nviews) {
    VkWriteDescriptorSet w[VKB_MAX_VIEWS];
    for (uint32_t i = 0; i < nviews; i++)
      w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                    .dstBinding = i,
                                    .descriptorCount = 1,
                                    .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER,
                                    .pTexelBufferView = &views[i]};
    d->push_descriptors(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, nviews, w);
  }
  d->fn.vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof addr, &addr);
  d->fn.vkCmdDispatch(cb, gx, gy, gz);
  return vkb_stream_recorded(s);
}

bp_status_t vkb_dispatch(vkb_stream_t *s, const char *name, const uint32_t *spec, uint32_t nspec,
                         const void *params, uint32_t psize, uint32_t gx, uint32_t gy,
                         uint32_t gz) {
  return dispatch(s, name, spec, nspec, params, psize, NULL, 0, gx, gy, gz);
}

bp_status_t vkb_dispatch_views(vkb_stream_t *s, const char *name, const uint32_t *spec,
                               uint32_t nspec, const void *params, uint32_t psize,
                               const VkBufferView *views, uint32_t nviews, uint32_t gx, uint32_t gy,
                               uint32_t gz) {
  return dispatch(s, name, spec, nspec, params, psize, views, nviews, gx, gy, gz);
}
