/*
 * log.c — the one logging function and the host services for plugins.
 *
 * BACKPLANE_DEBUG selects what is printed to stderr: a comma-separated list
 * of one level (error, warn, info, debug; default warn) and categories
 * (loader, api, plugin, memory, all; default all), e.g.
 * BACKPLANE_DEBUG=debug,loader.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int log_level = BP_LOG_WARN;
static unsigned log_categories = ~0u;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"error", "warn", "info", "debug"};
static const char *const category_names[] = {"loader", "api", "plugin",
                                             "memory"};

const char *bp__getenv(const char *name) { return secure_getenv(name); }

static void parse_token(const char *tok, size_t len, bool *any_category) {
  for (int i = 0; i < 4; i++)
    if (strlen(level_names[i]) == len && !strncmp(tok, level_names[i], len))
      log_level = i;
  if (len == 3 && !strncmp(tok, "all", 3)) {
    log_categories = ~0u;
    *any_category = true;
  }
  for (unsigned c = 0; c < 4; c++) {
    if (strlen(category_names[c]) == len &&
        !strncmp(tok, category_names[c], len)) {
      if (!*any_category) log_categories = 0;
      *any_category = true;
      log_categories |= 1u << c;
    }
  }
}

static void log_configure(void) {
  const char *spec = bp__getenv("BACKPLANE_DEBUG");
  if (!spec) return;
  bool any_category = false;
  while (*spec) {
    size_t len = strcspn(spec, ",");
    parse_token(spec, len, &any_category);
    spec += len;
    if (*spec == ',') spec++;
  }
}

static void log_write(bp_log_level_t level, const char *who, const char *fmt,
                      va_list ap) {
  char line[1024];
  vsnprintf(line, sizeof line, fmt, ap);
  pthread_mutex_lock(&log_lock);
  fprintf(stderr, "backplane %s [%s]: %s\n", level_names[level], who, line);
  pthread_mutex_unlock(&log_lock);
}

void bp__log(bp_log_level_t level, bp__log_category_t cat, const char *fmt,
             ...) {
  pthread_once(&log_once, log_configure);
  if ((int)level > log_level || !(log_categories & (1u << cat))) return;
  va_list ap;
  va_start(ap, fmt);
  log_write(level, category_names[cat], fmt, ap);
  va_end(ap);
}

/* ---- host services ---------------------------------------------------------*/

static void host_log(bp_log_level_t level, const char *plugin, const char *fmt,
                     ...) {
  pthread_once(&log_once, log_configure);
  if (level > BP_LOG_DEBUG) level = BP_LOG_DEBUG;
  if ((int)level > log_level || !(log_categories & (1u << BP__LOG_PLUGIN)))
    return;
  char who[80];
  snprintf(who, sizeof who, "plugin %s", plugin ? plugin : "?");
  va_list ap;
  va_start(ap, fmt);
  log_write(level, who, fmt, ap);
  va_end(ap);
}

static void host_set_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  bp__set_error_v(fmt, ap);
  va_end(ap);
}

static const bp_host_services_t host_services = {
    .struct_size = sizeof(bp_host_services_t),
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .host_version = BP_VERSION_STRING,
    .log = host_log,
    .getenv = bp__getenv,
    .set_error = host_set_error,
    .tune_lookup = bp__tune_lookup,
    .tune_store = bp__tune_store,
};

const bp_host_services_t *bp__host_services(void) { return &host_services; }
