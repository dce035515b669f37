/*
 * device.c — probe, capability table, device open and close.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vkb.h"
#include "vkb_model.h"
#include "vkb_quant.h"

/* Features and properties of one physical device, queried together. */
typedef struct phys_query {
  VkPhysicalDeviceProperties props;
  VkPhysicalDeviceVulkan11Properties p11;
  VkPhysicalDeviceVulkan12Properties p12;
  VkPhysicalDevicePCIBusInfoPropertiesEXT pci;
  VkPhysicalDeviceFeatures2 f;
  VkPhysicalDeviceVulkan11Features f11;
  VkPhysicalDeviceVulkan12Features f12;
  VkPhysicalDeviceShaderIntegerDotProductFeatures fdot;
  bool has_pci, has_coop, has_push, texel_format, texel_r16, has_dot;
} phys_query_t;

static bool has_extension(vkb_global_t *g, VkPhysicalDevice pd, const char *name) {
  uint32_t n = 0;
  g->fn.vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
  VkExtensionProperties *e = calloc(n ? n : 1, sizeof *e);
  if (!e) return false;
  g->fn.vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e);
  bool found = false;
  for (uint32_t i = 0; i < n && !found; i++) found = strcmp(e[i].extensionName, name) == 0;
  free(e);
  return found;
}

static void query_phys(vkb_global_t *g, VkPhysicalDevice pd, phys_query_t *q) {
  memset(q, 0, sizeof *q);
  g->fn.vkGetPhysicalDeviceProperties(pd, &q->props);
  /* The 1.1/1.2 structs exist only on devices of that version. */
  if (q->props.apiVersion < VK_API_VERSION_1_2) return;
  q->has_pci = has_extension(g, pd, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
  q->has_coop = has_extension(g, pd, "VK_KHR_cooperative_matrix") ||
                has_extension(g, pd, "VK_NV_cooperative_matrix");
  q->has_push = has_extension(g, pd, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  q->has_dot = has_extension(g, pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  VkFormatProperties fp;
  g->fn.vkGetPhysicalDeviceFormatProperties(pd, VK_FORMAT_R32G32B32A32_SFLOAT, &fp);
  q->texel_format = (fp.bufferFeatures & VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT) != 0;
  g->fn.vkGetPhysicalDeviceFormatProperties(pd, VK_FORMAT_R16_UINT, &fp);
  q->texel_r16 = (fp.bufferFeatures & VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT) != 0;
  q->p11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES;
  q->p12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES;
  q->p11.pNext = &q->p12;
  q->pci.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT;
  if (q->has_pci) q->p12.pNext = &q->pci;
  VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                    .pNext = &q->p11};
  g->fn.vkGetPhysicalDeviceProperties2(pd, &p2);
  q->f.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  q->f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  q->f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  q->f.pNext = &q->f11;
  q->f11.pNext = &q->f12;
  q->fdot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
  if (q->has_dot) q->f12.pNext = &q->fdot;
  g->fn.vkGetPhysicalDeviceFeatures2(pd, &q->f);
}

static void caps_from_query(const phys_query_t *q, vkb_caps_t *c) {
  memset(c, 0, sizeof *c);
  c->usable = q->props.apiVersion >= VK_API_VERSION_1_2 && q->f12.bufferDeviceAddress &&
              q->f12.timelineSemaphore && q->f.features.shaderInt64;
  c->storage8 = q->f12.storageBuffer8BitAccess && q->f12.shaderInt8;
  c->storage16 = q->f11.storageBuffer16BitAccess && q->f.features.shaderInt16;
  c->float64 = q->f.features.shaderFloat64;
  c->int_dot = q->has_dot && q->fdot.shaderIntegerDotProduct;
  c->texel = q->has_push && q->texel_format;
  c->texel_r16 = c->texel && q->texel_r16;
  c->max_texels = q->props.limits.maxTexelBufferElements;
  c->subgroup_size = q->p11.subgroupSize;
  c->shared_bytes = q->props.limits.maxComputeSharedMemorySize;
  c->max_invocations = q->props.limits.maxComputeWorkGroupInvocations;
  memcpy(c->max_groups, q->props.limits.maxComputeWorkGroupCount, sizeof c->max_groups);
}

/* Index of a queue family with compute, or UINT32_MAX. Families without
 * graphics come first: on discrete GPUs they are the async-compute queues. */
static uint32_t compute_family(vkb_global_t *g, VkPhysicalDevice pd, uint32_t *out_count) {
  VkQueueFamilyProperties fam[16];
  uint32_t n = 16, best = UINT32_MAX;
  g->fn.vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, fam);
  for (uint32_t i = 0; i < n; i++) {
    if (!(fam[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
    bool pure = !(fam[i].queueFlags & VK_QUEUE_GRAPHICS_BIT);
    if (best == UINT32_MAX || (pure && fam[i].timestampValidBits > 0)) {
      best = i;
      *out_count = fam[i].queueCount;
    }
  }
  return best;
}

static const char *vendor_name(uint32_t id) {
  switch (id) {
  case 0x10de:
    return "NVIDIA";
  case 0x1002:
    return "AMD";
  case 0x8086:
    return "Intel";
  case 0x13b5:
    return "ARM";
  case 0x5143:
    return "Qualcomm";
  case 0x10005:
    return "Mesa";
  default:
    return "unknown";
  }
}

static bp_device_kind_t kind_of(const VkPhysicalDeviceProperties *p) {
  /* llvmpipe reports CPU; anything on the CPU is emulation here. */
  switch (p->deviceType) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return BP_DEVICE_DISCRETE_GPU;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return BP_DEVICE_INTEGRATED_GPU;
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    return BP_DEVICE_SOFTWARE;
  default:
    return strstr(p->deviceName, "llvmpipe") ? BP_DEVICE_SOFTWARE : BP_DEVICE_OTHER;
  }
}

static uint64_t device_memory(vkb_global_t *g, VkPhysicalDevice pd) {
  VkPhysicalDeviceMemoryProperties mp;
  g->fn.vkGetPhysicalDeviceMemoryProperties(pd, &mp);
  uint64_t best = 0;
  for (uint32_t i = 0; i < mp.memoryHeapCount; i++)
    if ((mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
        mp.memoryHeaps[i].size > best)
      best = mp.memoryHeaps[i].size;
  return best;
}

static void fill_identity(const phys_query_t *q, char *out, size_t n) {
  if (q->has_pci) {
    snprintf(out, n, "pci:%04x:%02x:%02x.%x", q->pci.pciDomain, q->pci.pciBus, q->pci.pciDevice,
             q->pci.pciFunction);
    return;
  }
  int w = snprintf(out, n, "uuid:");
  for (int i = 0; i < (int)VK_UUID_SIZE && w + 3 < (int)n; i++)
    w += snprintf(out + w, n - (size_t)w, "%02x", q->p11.deviceUUID[i]);
}

/* ---- capability table: what the ops implement on a device's caps --------*/

/* Which dtypes the device can hold in storage buffers at all. */
static uint32_t storage_dtypes(const vkb_caps_t *c) {
  uint32_t m =
      BP_DTYPE_BIT(BP_F32) | BP_DTYPE_BIT(BP_I32) | BP_DTYPE_BIT(BP_I64) | BP_DTYPE_BIT(BP_F64);
  if (c->storage16) m |= BP_DTYPE_BIT(BP_F16) | BP_DTYPE_BIT(BP_BF16);
  if (c->storage8) m |= BP_DTYPE_BIT(BP_U8);
  return m;
}

/* Claims op for the float dtypes whose kernel variant `family_<dt>` is
 * built in and whose storage the device has. */
static uint32_t float_claims(const vkb_caps_t *c, const char *family) {
  static const bp_dtype_t fl[] = {BP_F32, BP_F16, BP_BF16};
  uint32_t m = 0, have = storage_dtypes(c);
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s_%s", family, vkb_dtype_tag(fl[i]));
    if ((have & BP_DTYPE_BIT(fl[i])) && vkb_kernel_present(name)) m |= BP_DTYPE_BIT(fl[i]);
  }
  return m;
}

void vkb_claims(const vkb_caps_t *c, uint32_t op_dtypes[BP_OP_TABLE_SIZE]) {
  memset(op_dtypes, 0, BP_OP_TABLE_SIZE * sizeof *op_dtypes);
  if (!c->usable) return;
  uint32_t have = storage_dtypes(c);
  if (vkb_kernel_present("copy_b32") && vkb_kernel_present("copy_b64")) {
    uint32_t m = have;
    if (!vkb_kernel_present("copy_b16")) m &= ~(BP_DTYPE_BIT(BP_F16) | BP_DTYPE_BIT(BP_BF16));
    if (!vkb_kernel_present("copy_b8")) m &= ~BP_DTYPE_BIT(BP_U8);
    op_dtypes[BP_OP_FILL] = op_dtypes[BP_OP_COPY] = m;
  }
  /* cast: every pair among the claimed dtypes must have its kernel. */
  static const bp_dtype_t ct[] = {BP_F32, BP_F16, BP_BF16, BP_I32, BP_U8};
  uint32_t cast = 0;
  for (int i = 0; i < 5; i++)
    if (have & BP_DTYPE_BIT(ct[i])) cast |= BP_DTYPE_BIT(ct[i]);
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 5; j++) {
      char name[32];
      snprintf(name, sizeof name, "cast_%s_%s", vkb_dtype_tag(ct[i]), vkb_dtype_tag(ct[j]));
      if (!vkb_kernel_present(name)) cast &= ~(BP_DTYPE_BIT(ct[i]) | BP_DTYPE_BIT(ct[j]));
    }
  op_dtypes[BP_OP_CAST] = cast;
  op_dtypes[BP_OP_UNARY] = op_dtypes[BP_OP_BINARY] = float_claims(c, "eltwise");
  op_dtypes[BP_OP_GEMM] = float_claims(c, "gemm");
  op_dtypes[BP_OP_GEMV] = op_dtypes[BP_OP_GEMM]; /* gemv runs on gemm */
  op_dtypes[BP_OP_REDUCE] = float_claims(c, "reduce");
  op_dtypes[BP_OP_SOFTMAX] = float_claims(c, "softmax");
  op_dtypes[BP_OP_LAYER_NORM] = op_dtypes[BP_OP_RMS_NORM] = float_claims(c, "norm");
  op_dtypes[BP_OP_ATTENTION] = float_claims(c, "attention");
  op_dtypes[BP_OP_CONV2D] = float_claims(c, "conv");
  op_dtypes[BP_OP_POOL2D] = float_claims(c, "pool");
  op_dtypes[BP_OP_BATCH_NORM] = float_claims(c, "bnorm");
  op_dtypes[BP_OP_ADAM] = float_claims(c, "adam");
  op_dtypes[BP_OP_RANDOM] = float_claims(c, "random");
  /* f64 only where the shader can compute in double (random's uniform and
   * normal f64 paths are double arithmetic, not just storage). */
  if (c->float64 && vkb_kernel_present("random_f64"))
    op_dtypes[BP_OP_RANDOM] |= BP_DTYPE_BIT(BP_F64);
}

static void fill_info(vkb_global_t *g, VkPhysicalDevice pd, bp_device_info_t *info) {
  phys_query_t q;
  vkb_caps_t caps;
  query_phys(g, pd, &q);
  caps_from_query(&q, &caps);
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  snprintf(info->name, sizeof info->name, "%s", q.props.deviceName);
  snprintf(info->vendor, sizeof info->vendor, "%s (0x%04x)", vendor_name(q.props.vendorID),
           q.props.vendorID);
  if (q.p12.driverInfo[0])
    snprintf(info->driver_version, sizeof info->driver_version, "%.20s %.40s", q.p12.driverName,
             q.p12.driverInfo);
  else
    snprintf(info->driver_version, sizeof info->driver_version, "0x%x", q.props.driverVersion);
  fill_identity(&q, info->identity, sizeof info->identity);
  info->kind = kind_of(&q.props);
  info->memory_bytes = device_memory(g, pd);
  if (info->kind != BP_DEVICE_DISCRETE_GPU) info->flags |= BP_DEVICE_FLAG_UNIFIED;
  uint32_t api = q.props.apiVersion;
  snprintf(info->description, sizeof info->description,
           "Vulkan %u.%u.%u; subgroup %u; shared %u KiB; fp16 arith %s; "
           "16-bit storage %s; fp64 %s; cooperative matrix %s%s",
           VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api), VK_API_VERSION_PATCH(api),
           caps.subgroup_size, caps.shared_bytes / 1024, q.f12.shaderFloat16 ? "yes" : "no",
           caps.storage16 ? "yes" : "no", caps.float64 ? "yes" : "no",
           q.has_coop ? "yes (unused)" : "no",
           caps.usable ? ""
                       : "; lacks buffer device address / timeline "
                         "semaphores / int64: no ops");
  vkb_claims(&caps, info->op_dtypes);
  vkb_model_claims(&caps, info->op_dtypes, info->op_features);
  vkb_quant_claims(&caps, info->op_dtypes, info->op_features);
  /* every GEMM and attention kernel runs the epilogue and the masks */
  if (info->op_dtypes[BP_OP_GEMM])
    info->op_features[BP_OP_GEMM] = BP_FEATURE_GEMM_BIAS | BP_FEATURE_GEMM_ACT;
  if (info->op_dtypes[BP_OP_ATTENTION])
    info->op_features[BP_OP_ATTENTION] = BP_FEATURE_ATTENTION_KV_LENS |
                                         BP_FEATURE_ATTENTION_WINDOW | BP_FEATURE_ATTENTION_BIAS |
                                         BP_FEATURE_ATTENTION_ALIBI;
  /* GLSL is listed even without libshaderc, so kernel_create can say
   * "unavailable: install libshaderc1" instead of a bare "unsupported". */
  if (caps.usable)
    info->kernel_formats =
        BP_KERNEL_FORMAT_BIT(BP_KERNEL_SPIRV) | BP_KERNEL_FORMAT_BIT(BP_KERNEL_GLSL);
}

/* The index-th physical device with a compute queue, as probe counts. */
static VkPhysicalDevice nth_compute_device(vkb_global_t *g, uint32_t index) {
  for (uint32_t i = 0, n = 0; i < g->phys_count; i++) {
    uint32_t qc;
    if (compute_family(g, g->phys[i], &qc) == UINT32_MAX) continue;
    if (n++ == index) return g->phys[i];
  }
  return VK_NULL_HANDLE;
}

uint32_t vkb_device_count(vkb_global_t *g) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < g->phys_count; i++) {
    uint32_t qc;
    if (compute_family(g, g->phys[i], &qc) != UINT32_MAX) n++;
  }
  return n;
}

void vkb_device_describe(vkb_global_t *g, uint32_t index, bp_device_info_t *info) {
  fill_info(g, nth_compute_device(g, index), info);
}

static bp_status_t create_logical(vkb_device_t *d, const phys_query_t *q) {
  float prio[VKB_MAX_QUEUES];
  for (int i = 0; i < VKB_MAX_QUEUES; i++) prio[i] = 1.0f;
  VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                 .queueFamilyIndex = d->queue_family,
                                 .queueCount = d->queue_count,
                                 .pQueuePriorities = prio};
  /* Enable only what the kernels use, and only where present. */
  VkPhysicalDeviceShaderIntegerDotProductFeatures fdot = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
      .shaderIntegerDotProduct = VK_TRUE};
  VkPhysicalDeviceVulkan12Features f12 = {.sType =
                                              VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                          .pNext = d->caps.int_dot ? &fdot : NULL,
                                          .bufferDeviceAddress = VK_TRUE,
                                          .timelineSemaphore = VK_TRUE,
                                          .storageBuffer8BitAccess = q->f12.storageBuffer8BitAccess,
                                          .shaderInt8 = q->f12.shaderInt8,
                                          .shaderFloat16 = q->f12.shaderFloat16};
  VkPhysicalDeviceVulkan11Features f11 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
      .pNext = &f12,
      .storageBuffer16BitAccess = q->f11.storageBuffer16BitAccess};
  VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                 .pNext = &f11};
  f.features.shaderInt64 = VK_TRUE;
  f.features.shaderInt16 = q->f.features.shaderInt16;
  f.features.shaderFloat64 = q->f.features.shaderFloat64;
  const char *ext[2];
  uint32_t next = 0;
  if (q->has_push) ext[next++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
  if (d->caps.int_dot) ext[next++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
  VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                           .pNext = &f,
                           .queueCreateInfoCount = 1,
                           .pQueueCreateInfos = &qci,
                           .enabledExtensionCount = next,
                           .ppEnabledExtensionNames = ext};
  bp_status_t st =
      vkb_check(d->g->fn.vkCreateDevice(d->phys, &ci, NULL, &d->dev), "vkCreateDevice");
  if (st != BP_OK) return st;
#define VKB__LOAD(name)                                                                            \
  d->fn.name = (PFN_##name)d->g->fn.vkGetDeviceProcAddr(d->dev, #name);                            \
  if (!d->fn.name) return vkb_fail(BP_ERR_UNAVAILABLE, "vulkan: %s not found", #name);
  VKB_DEVICE_FNS(VKB__LOAD)
#undef VKB__LOAD
  if (q->has_push)
    d->push_descriptors = (PFN_vkCmdPushDescriptorSetKHR)d->g->fn.vkGetDeviceProcAddr(
        d->dev, "vkCmdPushDescriptorSetKHR");
  if (!d->push_descriptors) d->caps.texel = false;
  for (uint32_t i = 0; i < d->queue_count; i++) {
    d->fn.vkGetDeviceQueue(d->dev, d->queue_family, i, &d->queues[i]);
    pthread_mutex_init(&d->queue_lock[i], NULL);
  }
  return BP_OK;
}

void vkb_device_close(bp_plugin_device_t *device) {
  vkb_device_t *d = (vkb_device_t *)device;
  if (!d) return;
  if (d->dev) {
    d->fn.vkDeviceWaitIdle(d->dev);
    while (d->streams) vkb_stream_free(d->streams);
    vkb_pipelines_destroy(d);
    vkb_heaps_destroy(d);
    d->fn.vkDestroyDevice(d->dev, NULL);
  }
  free(d);
}

bp_status_t vkb_device_open(uint32_t index, const bp_plugin_device_config_t *config,
                            bp_plugin_device_t **out_device) {
  *out_device = NULL;
  vkb_global_t *g;
  bp_status_t st = vkb_global_get(&g);
  if (st != BP_OK) return st;
  VkPhysicalDevice pd = nth_compute_device(g, index);
  if (!pd) return vkb_fail(BP_ERR_NOT_FOUND, "vulkan: no device %u", index);
  vkb_device_t *d = calloc(1, sizeof *d);
  if (!d) return BP_ERR_OUT_OF_MEMORY;
  d->g = g;
  d->phys = pd;
  pthread_mutex_init(&d->mem_lock, NULL);
  pthread_mutex_init(&d->pipe_lock, NULL);
  pthread_mutex_init(&d->stream_lock, NULL);
  phys_query_t q;
  query_phys(g, pd, &q);
  caps_from_query(&q, &d->caps);
  d->timestamp_period = q.props.limits.timestampPeriod;
  d->software = kind_of(&q.props) == BP_DEVICE_SOFTWARE;
  snprintf(d->tune_device, sizeof d->tune_device, "%s", q.props.deviceName);
  snprintf(d->tune_driver, sizeof d->tune_driver, "0x%x", q.props.driverVersion);
  d->gemm_tile = -1;
  if (config && config->struct_size >= offsetof(bp_plugin_device_config_t, memory_limit) + 8)
    d->memory_limit = config->memory_limit;
  if (!d->caps.usable) {
    st = vkb_fail(BP_ERR_UNSUPPORTED,
                  "vulkan: %s lacks Vulkan 1.2 buffer device addresses, "
                  "timeline semaphores or int64",
                  q.props.deviceName);
    goto out;
  }
  d->queue_family = compute_family(g, pd, &d->queue_count);
  if (d->queue_count > VKB_MAX_QUEUES) d->queue_count = VKB_MAX_QUEUES;
  if ((st = create_logical(d, &q)) != BP_OK) goto out;
  if ((st = vkb_heaps_init(d)) != BP_OK) goto out;
  if ((st = vkb_pipelines_init(d)) != BP_OK) goto out;
  if ((st = vkb_stream_new(d, &d->default_stream)) != BP_OK) goto out;
  *out_device = (bp_plugin_device_t *)d;
out:
  if (st != BP_OK) vkb_device_close((bp_plugin_device_t *)d);
  return st;
}

bp_status_t vkb_device_synchronize(bp_plugin_device_t *device) {
  vkb_device_t *d = (vkb_device_t *)device;
  bp_status_t st = BP_OK;
  pthread_mutex_lock(&d->stream_lock);
  for (vkb_stream_t *s = d->streams; s && st == BP_OK; s = s->next) {
    pthread_mutex_lock(&s->lock);
    st = vkb_stream_wait(s);
    pthread_mutex_unlock(&s->lock);
  }
  pthread_mutex_unlock(&d->stream_lock);
  return st;
}
