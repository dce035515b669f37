/*
 * device.c — enumeration, capabilities and the capability table, the device
 * records probe returns, and device open/close.
 * Devices are numbered across platforms in the ICD loader's order, platform
 * by platform; probe and device_open enumerate the same way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"
#include "ocl_model.h"
#include "ocl_quant.h"

bp_status_t ocl_enumerate(cl_platform_id *out_plats, cl_device_id *out_ids, uint32_t capacity,
                          uint32_t *out_count) {
  cl_platform_id plats[16];
  cl_uint nplat = 0;
  *out_count = 0;
  cl_int err = ocl_api.clGetPlatformIDs(16, plats, &nplat);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || nplat == 0)
    return BP_OK; /* a loader with no ICDs installed: zero devices */
  if (err != CL_SUCCESS) return ocl_fail(err, "clGetPlatformIDs");
  if (nplat > 16) nplat = 16;
  uint32_t n = 0;
  for (cl_uint p = 0; p < nplat; p++) {
    cl_device_id ids[OCL_MAX_DEVICES];
    cl_uint nd = 0;
    if (ocl_api.clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, OCL_MAX_DEVICES, ids, &nd) !=
        CL_SUCCESS)
      continue; /* a platform without devices is not an error */
    for (cl_uint i = 0; i < nd && i < OCL_MAX_DEVICES; i++, n++) {
      if (n < capacity) {
        out_plats[n] = plats[p];
        out_ids[n] = ids[i];
      }
    }
  }
  *out_count = n;
  return BP_OK;
}

/* Reads a string property, truncating long values (CL_DEVICE_VERSION on
 * PoCL exceeds 64 bytes) instead of failing. */
static void info_str(cl_device_id dev, cl_device_info what, char *out, size_t cap) {
  size_t n = 0;
  out[0] = 0;
  if (ocl_api.clGetDeviceInfo(dev, what, 0, NULL, &n) != CL_SUCCESS || n == 0) return;
  char *tmp = malloc(n + 1);
  if (!tmp) return;
  if (ocl_api.clGetDeviceInfo(dev, what, n, tmp, NULL) == CL_SUCCESS) {
    tmp[n] = 0;
    snprintf(out, cap, "%s", tmp);
  }
  free(tmp);
}

static bool has_ext(const char *exts, const char *name) {
  size_t n = strlen(name);
  for (const char *p = exts; (p = strstr(p, name)) != NULL; p += n)
    if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return true;
  return false;
}

void ocl_caps_read(cl_platform_id plat, cl_device_id dev, ocl_caps_t *c) {
  memset(c, 0, sizeof *c);
  info_str(dev, CL_DEVICE_NAME, c->name, sizeof c->name);
  info_str(dev, CL_DEVICE_VENDOR, c->vendor, sizeof c->vendor);
  info_str(dev, CL_DRIVER_VERSION, c->driver, sizeof c->driver);
  info_str(dev, CL_DEVICE_VERSION, c->version, sizeof c->version);
  ocl_api.clGetPlatformInfo(plat, CL_PLATFORM_NAME, sizeof c->platform, c->platform, NULL);
  c->platform[sizeof c->platform - 1] = 0;
  char *exts = calloc(1, 65536);
  if (exts) {
    info_str(dev, CL_DEVICE_EXTENSIONS, exts, 65536);
    c->fp16 = has_ext(exts, "cl_khr_fp16");
    c->fp64 = has_ext(exts, "cl_khr_fp64");
    c->pci_bus_info = has_ext(exts, "cl_khr_pci_bus_info");
    c->command_buffer = has_ext(exts, "cl_khr_command_buffer");
    c->int_dot = has_ext(exts, "cl_khr_integer_dot_product");
    free(exts);
  }
  if (c->command_buffer) {
    cl_device_command_buffer_capabilities_khr cb = 0;
    ocl_api.clGetDeviceInfo(dev, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR, sizeof cb, &cb, NULL);
    c->command_buffer_simultaneous = (cb & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR) != 0;
  }
  if (c->int_dot) { /* quant.cl's dot(char4, char4) needs the 4x8-bit (unpacked) inputs */
    cl_bitfield dot = 0;
    ocl_api.clGetDeviceInfo(dev, CL_DEVICE_INTEGER_DOT_PRODUCT_CAPABILITIES_KHR, sizeof dot, &dot,
                            NULL);
    c->int_dot = (dot & CL_DEVICE_INTEGER_DOT_PRODUCT_INPUT_4x8BIT_KHR) != 0;
  }
  cl_ulong gmem = 0, lmem = 0;
  cl_uint cu = 0;
  ocl_api.clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof c->type, &c->type, NULL);
  ocl_api.clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL);
  ocl_api.clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL);
  ocl_api.clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
  ocl_api.clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof c->max_wg, &c->max_wg, NULL);
  ocl_api.clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof c->mem_align_bits,
                          &c->mem_align_bits, NULL);
  c->global_mem = gmem;
  c->local_mem = lmem;
  c->compute_units = cu;
}

/* CPU implementations (PoCL, Intel's CPU runtime, ...) emulate a GPU
 * programming model on the host; rank them as software so a real GPU or
 * the native CPU backend wins. */
static bp_device_kind_t device_kind(const ocl_caps_t *c) {
  if (c->type & CL_DEVICE_TYPE_CPU) return BP_DEVICE_SOFTWARE;
  if (c->type & CL_DEVICE_TYPE_GPU) {
    return BP_DEVICE_DISCRETE_GPU;
  }
  return BP_DEVICE_OTHER;
}

static void device_identity(cl_device_id dev, const ocl_caps_t *c, char *out, size_t cap) {
  out[0] = 0;
  if (!c->pci_bus_info) return;
  cl_device_pci_bus_info_khr pci;
  if (ocl_api.clGetDeviceInfo(dev, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof pci, &pci, NULL) ==
      CL_SUCCESS)
    snprintf(out, cap, "pci:%04x:%02x:%02x.%x", pci.pci_domain, pci.pci_bus, pci.pci_device,
             pci.pci_function);
}

/* The capability table: which dtypes each op family really implements on a
 * device. */
void ocl_op_dtypes(const ocl_caps_t *c, uint32_t *t) {
  memset(t, 0, sizeof(uint32_t) * BP_OP_TABLE_SIZE);
  uint32_t f = BP_DTYPE_BIT(BP_F32) | BP_DTYPE_BIT(BP_BF16);
  /* f16 is stored through vload_half / vstore_half (core OpenCL 1.2) and
   * computed in f32, so it would run anywhere; it is claimed only where the
   * device has cl_khr_fp16, unless BACKPLANE_OPENCL_F16=1 (for testing the
   * f16 path on devices without it, such as PoCL on x86). */
  const char *force =
      ocl_host && ocl_host->getenv ? ocl_host->getenv("BACKPLANE_OPENCL_F16") : NULL;
  if (c->fp16 || (force && strcmp(force, "1") == 0)) f |= BP_DTYPE_BIT(BP_F16);
  if (c->fp64) f |= BP_DTYPE_BIT(BP_F64);
  uint32_t all = f | BP_DTYPES_INT;
  t[BP_OP_FILL] = all;
  t[BP_OP_COPY] = all;
  t[BP_OP_CAST] = all;
  t[BP_OP_UNARY] = f;
  t[BP_OP_BINARY] = f;
  t[BP_OP_GEMM] = f;
  t[BP_OP_GEMV] = f;
  t[BP_OP_REDUCE] = f;
  t[BP_OP_SOFTMAX] = f;
  t[BP_OP_LAYER_NORM] = f;
  t[BP_OP_RMS_NORM] = f;
  t[BP_OP_ATTENTION] = f;
  t[BP_OP_CONV2D] = f;
  t[BP_OP_POOL2D] = f;
  t[BP_OP_BATCH_NORM] = f;
  t[BP_OP_ADAM] = f;
  t[BP_OP_RANDOM] = f;
}

void ocl_device_describe(cl_platform_id plat, cl_device_id dev, bp_device_info_t *info) {
  ocl_caps_t c;
  ocl_caps_read(plat, dev, &c);
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  snprintf(info->name, sizeof info->name, "%s", c.name);
  snprintf(info->vendor, sizeof info->vendor, "%s", c.vendor);
  snprintf(info->driver_version, sizeof info->driver_version, "%s", c.driver);
  device_identity(dev, &c, info->identity, sizeof info->identity);
  info->kind = device_kind(&c);
  /* Unified-memory GPUs report HOST_UNIFIED_MEMORY; they are integrated. */
  cl_bool unified = CL_FALSE;
  ocl_api.clGetDeviceInfo(dev, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
  if (info->kind == BP_DEVICE_DISCRETE_GPU && unified) info->kind = BP_DEVICE_INTEGRATED_GPU;
  if (unified) info->flags |= BP_DEVICE_FLAG_UNIFIED;
  info->score_hint = (int32_t)(c.compute_units > 1000 ? 1000 : c.compute_units);
  info->memory_bytes = c.global_mem;
  info->compute_units = c.compute_units;
  ocl_op_dtypes(&c, info->op_dtypes);
  ocl_model_claims(&c, info->op_dtypes, info->op_features);
  ocl_quant_claims(&c, info->op_dtypes, info->op_features);
  /* gemm.cl's kernels end in the epilogue (ops_blas.c). */
  info->op_features[BP_OP_GEMM] = BP_FEATURE_GEMM_BIAS | BP_FEATURE_GEMM_ACT;
  /* attention.cl's kernels apply every mask (ops_dnn.c, ops_attention_gemm.c). */
  info->op_features[BP_OP_ATTENTION] = BP_FEATURE_ATTENTION_KV_LENS | BP_FEATURE_ATTENTION_WINDOW |
                                       BP_FEATURE_ATTENTION_BIAS | BP_FEATURE_ATTENTION_ALIBI;
  info->kernel_formats = BP_KERNEL_FORMAT_BIT(BP_KERNEL_OPENCL_C);
  snprintf(info->description, sizeof info->description,
           "%s on %s; local memory %llu KiB; fp16 %s, fp64 %s", c.version, c.platform,
           (unsigned long long)(c.local_mem / 1024), c.fp16 ? "yes" : "no", c.fp64 ? "yes" : "no");
}

static void device_free(ocl_device_t *d) {
  ocl_programs_release(d);
  if (d->queue) ocl_api.clReleaseCommandQueue(d->queue);
  if (d->ctx) ocl_api.clReleaseContext(d->ctx);
  pthread_mutex_destroy(&d->lock);
  free(d);
}

bp_status_t ocl_device_open(uint32_t index, const bp_plugin_device_config_t *config,
                            bp_plugin_device_t **out_device) {
  (void)config;
  *out_device = NULL;
  bp_status_t st = ocl_api_load();
  if (st != BP_OK) return st;
  cl_platform_id plats[OCL_MAX_DEVICES];
  cl_device_id ids[OCL_MAX_DEVICES];
  uint32_t n = 0;
  if ((st = ocl_enumerate(plats, ids, OCL_MAX_DEVICES, &n)) != BP_OK) return st;
  if (index >= n || index >= OCL_MAX_DEVICES) {
    ocl_host->set_error("opencl: device %u does not exist (%u present)", index, n);
    return BP_ERR_NOT_FOUND;
  }
  ocl_device_t *d = calloc(1, sizeof *d);
  if (!d) return BP_ERR_OUT_OF_MEMORY;
  pthread_mutex_init(&d->lock, NULL);
  d->platform = plats[index];
  d->id = ids[index];
  ocl_caps_read(d->platform, d->id, &d->caps);
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)d->platform, 0};
  d->ctx = ocl_api.clCreateContext(props, 1, &d->id, NULL, NULL, &err);
  if (!d->ctx) {
    st = ocl_fail(err, "clCreateContext");
    goto out;
  }
  d->queue = ocl_api.clCreateCommandQueue(d->ctx, d->id, CL_QUEUE_PROFILING_ENABLE, &err);
  if (!d->queue) {
    st = ocl_fail(err, "clCreateCommandQueue");
    goto out;
  }
  *out_device = (bp_plugin_device_t *)d;
  return BP_OK;
out:
  device_free(d);
  return st;
}

bp_status_t ocl_device_finish(ocl_device_t *d) {
  cl_int err = CL_SUCCESS;
  pthread_mutex_lock(&d->lock);
  for (ocl_stream_t *s = d->streams; s; s = s->next) {
    cl_int e = ocl_api.clFinish(s->queue);
    if (e != CL_SUCCESS) err = e;
  }
  pthread_mutex_unlock(&d->lock);
  cl_int e = ocl_api.clFinish(d->queue);
  if (e != CL_SUCCESS) err = e;
  return err == CL_SUCCESS ? BP_OK : ocl_fail(err, "clFinish");
}

bp_status_t ocl_device_synchronize(bp_plugin_device_t *device) {
  return ocl_device_finish((ocl_device_t *)device);
}

void ocl_device_close(bp_plugin_device_t *device) {
  ocl_device_t *d = (ocl_device_t *)device;
  if (!d) return;
  ocl_device_finish(d);
  unsigned from_source = 0;
  double ms = ocl_compile_ms(&from_source);
  OCL_LOG(BP_LOG_DEBUG,
          "closing %s: %.1f ms in clBuildProgram so far in this "
          "process, %u builds from source (the rest from the binary cache)",
          d->caps.name, ms, from_source);
  /* Streams the core did not destroy die with the device. */
  while (d->streams) {
    ocl_stream_t *s = d->streams;
    d->streams = s->next;
    ocl_api.clReleaseCommandQueue(s->queue);
    free(s);
  }
  device_free(d);
}

cl_command_queue ocl_queue(ocl_device_t *d, bp_plugin_stream_t *stream) {
  return stream ? ((ocl_stream_t *)stream)->queue : d->queue;
}
