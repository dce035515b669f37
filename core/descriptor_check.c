/*
 * descriptor_check.c — the rules a plugin's descriptor must meet before the
 * loader calls anything in it: magic, ABI major, struct_size against the
 * exported symbol, a short name, version strings, and the required entries
 * (docs/plugin-abi.md §2, §5). Used by the loader and by the isolated probe.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static bool name_valid(const char *name) {
  if (!name || !name[0] || strnlen(name, 64) >= 64) return false;
  for (const char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' ||
          *c == '-'))
      return false;
  return true;
}

static bool string_valid(const char *s, size_t max) {
  return s && strnlen(s, max) < max;
}

/* mem_map and mem_unmap (ABI 1.4) come as a pair: a mapping the core could
 * not release would pin the device's memory (rule 5.1). */
static bp_status_t check_map_pair(const bp_plugin_descriptor_t *d, char *reason, size_t reason_size) {
  if (d->struct_size < offsetof(bp_plugin_descriptor_t, mem_unmap) + sizeof(void *)) return BP_OK;
  if (!d->mem_map == !d->mem_unmap) return BP_OK;
  snprintf(reason, reason_size, "'%s' is set without '%s': they are optional as a pair (rule 5.1)",
           d->mem_map ? "mem_map" : "mem_unmap", d->mem_map ? "mem_unmap" : "mem_map");
  return BP_ERR_INCOMPATIBLE;
}

bp_status_t bp__descriptor_check(const bp_plugin_descriptor_t *d,
                                 uint32_t avail_size, char *reason,
                                 size_t reason_size,
                                 bp_plugin_stage_t *out_stage) {
  *out_stage = BP_STAGE_VERSION;
  if (avail_size < 12) {
    snprintf(reason, reason_size,
             "descriptor symbol is %u bytes, too small for a header",
             avail_size);
    return BP_ERR_INCOMPATIBLE;
  }
  if (d->magic != BP_PLUGIN_MAGIC) {
    snprintf(reason, reason_size, "wrong magic 0x%08x (expected 0x%08x)",
             d->magic, BP_PLUGIN_MAGIC);
    return BP_ERR_INCOMPATIBLE;
  }
  if (d->abi_major != BP_PLUGIN_ABI_MAJOR) {
    snprintf(reason, reason_size,
             "plugin ABI %u.%u is %s than the loader's %d.%d", d->abi_major,
             d->abi_minor, d->abi_major > BP_PLUGIN_ABI_MAJOR ? "newer" : "older",
             BP_PLUGIN_ABI_MAJOR, BP_PLUGIN_ABI_MINOR);
    return BP_ERR_INCOMPATIBLE;
  }
  if (d->struct_size < BP_PLUGIN_DESCRIPTOR_MIN_SIZE ||
      d->struct_size > avail_size) {
    snprintf(reason, reason_size,
             "descriptor struct_size %u is %s (minimum %zu, symbol has %u)",
             d->struct_size,
             d->struct_size > avail_size ? "larger than the symbol" : "too small",
             (size_t)BP_PLUGIN_DESCRIPTOR_MIN_SIZE, avail_size);
    return BP_ERR_INCOMPATIBLE;
  }
  *out_stage = BP_STAGE_VALIDATE;
  if (!name_valid(d->name)) {
    snprintf(reason, reason_size,
             "descriptor name is NULL or not a short [a-z0-9_-] word");
    return BP_ERR_INCOMPATIBLE;
  }
  if (!string_valid(d->version, 64) ||
      (d->description && !string_valid(d->description, 512))) {
    snprintf(reason, reason_size, "descriptor version string missing or too long");
    return BP_ERR_INCOMPATIBLE;
  }
  static const struct {
    size_t offset;
    const char *name;
  } required[] = {
#define REQ(f) {offsetof(bp_plugin_descriptor_t, f), #f}
      REQ(init),       REQ(shutdown),       REQ(probe),
      REQ(device_open), REQ(device_close),  REQ(device_synchronize),
      REQ(mem_alloc),  REQ(mem_free),       REQ(mem_write),
      REQ(mem_read),   REQ(mem_copy),       REQ(stream_create),
      REQ(stream_destroy), REQ(stream_synchronize),
#undef REQ
  };
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
    void *fn;
    memcpy(&fn, (const char *)d + required[i].offset, sizeof fn);
    if (!fn) {
      snprintf(reason, reason_size, "required function '%s' is NULL",
               required[i].name);
      return BP_ERR_INCOMPATIBLE;
    }
  }
  return check_map_pair(d, reason, reason_size);
}
