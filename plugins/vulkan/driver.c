/*
 * driver.c — opens libvulkan.so.1 at run time and creates the one instance
 * the plugin uses. There is no link-time dependency on the Vulkan loader, so
 * a machine without it gets a clear "unavailable" instead of a load failure.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vkb.h"

const bp_host_services_t *vkb_host;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static vkb_global_t g_vk;
static bool g_ready;

void vkb_log(bp_log_level_t level, const char *fmt, ...) {
  if (!vkb_host || !vkb_host->log) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  vkb_host->log(level, "vulkan", "%s", line);
}

bp_status_t vkb_fail(bp_status_t status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (vkb_host && vkb_host->set_error) vkb_host->set_error("%s", msg);
  return status;
}

bp_status_t vkb_check(VkResult r, const char *what) {
  switch (r) {
  case VK_SUCCESS:
    return BP_OK;
  case VK_ERROR_OUT_OF_HOST_MEMORY:
  case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    return vkb_fail(BP_ERR_OUT_OF_MEMORY, "vulkan: %s: out of memory (%d)", what, (int)r);
  case VK_ERROR_DEVICE_LOST:
    return vkb_fail(BP_ERR_DEVICE_LOST, "vulkan: %s: device lost", what);
  case VK_TIMEOUT:
    return vkb_fail(BP_ERR_TIMEOUT, "vulkan: %s: timed out", what);
  default:
    return vkb_fail(BP_ERR_INTERNAL, "vulkan: %s failed with VkResult %d", what, (int)r);
  }
}

/* Creates the instance asking for Vulkan 1.2 (buffer device addresses and
 * timeline semaphores are core there). */
static bp_status_t create_instance(PFN_vkGetInstanceProcAddr gipa) {
  PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(VK_NULL_HANDLE, "vkCreateInstance");
  if (!create)
    return vkb_fail(BP_ERR_UNAVAILABLE, "vulkan: vkCreateInstance missing from libvulkan.so.1");
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                           .pApplicationName = "backplane",
                           .pEngineName = "backplane",
                           .apiVersion = VK_API_VERSION_1_2};
  VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                             .pApplicationInfo = &app};
  VkResult r = create(&ci, NULL, &g_vk.instance);
  if (r != VK_SUCCESS)
    return vkb_fail(BP_ERR_UNAVAILABLE, "vulkan: vkCreateInstance failed (%d): no usable driver",
                    (int)r);
#define VKB__LOAD(name)                                                                            \
  g_vk.fn.name = (PFN_##name)gipa(g_vk.instance, #name);                                           \
  if (!g_vk.fn.name) return vkb_fail(BP_ERR_UNAVAILABLE, "vulkan: %s not found", #name);
  VKB_INSTANCE_FNS(VKB__LOAD)
#undef VKB__LOAD
  g_vk.phys_count = VKB_MAX_DEVICES;
  r = g_vk.fn.vkEnumeratePhysicalDevices(g_vk.instance, &g_vk.phys_count, g_vk.phys);
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) return vkb_check(r, "vkEnumeratePhysicalDevices");
  return BP_OK;
}

static bp_status_t global_load(void) {
  g_vk.lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!g_vk.lib) return vkb_fail(BP_ERR_UNAVAILABLE, "Vulkan loader not found (libvulkan.so.1)");
  PFN_vkGetInstanceProcAddr gipa =
      (PFN_vkGetInstanceProcAddr)dlsym(g_vk.lib, "vkGetInstanceProcAddr");
  if (!gipa)
    return vkb_fail(BP_ERR_UNAVAILABLE, "vulkan: vkGetInstanceProcAddr missing in libvulkan.so.1");
  return create_instance(gipa);
}

bp_status_t vkb_global_get(vkb_global_t **out_global) {
  *out_global = NULL;
  pthread_mutex_lock(&g_lock);
  bp_status_t st = BP_OK;
  if (!g_ready) {
    st = global_load();
    if (st == BP_OK) {
      g_ready = true;
    } else {
      /* A half-made instance is undone so a later probe can retry. */
      if (g_vk.instance && g_vk.fn.vkDestroyInstance)
        g_vk.fn.vkDestroyInstance(g_vk.instance, NULL);
      if (g_vk.lib) dlclose(g_vk.lib);
      memset(&g_vk, 0, sizeof g_vk);
    }
  }
  if (st == BP_OK) *out_global = &g_vk;
  pthread_mutex_unlock(&g_lock);
  return st;
}

void vkb_global_release(void) {
  pthread_mutex_lock(&g_lock);
  if (g_ready) {
    g_vk.fn.vkDestroyInstance(g_vk.instance, NULL);
    dlclose(g_vk.lib);
    memset(&g_vk, 0, sizeof g_vk);
    g_ready = false;
  }
  pthread_mutex_unlock(&g_lock);
}
