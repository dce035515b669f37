/*
 * log.c — the one logging function and the host services for plugins.
 *
 * BACKPLANE_DEBUG selects what is printed to stderr: a comma-separated list
 * of one level (error, warn, info, debug; default warn) and categories
 * (loader, api, plugin, memory, all; default all), e.g.
 * BACKPLANE_DEBUG=debug,loader. A word that is neither gets one warning
 * naming it and the valid words. bp_log_set_level replaces the level and
 * bp_log_set_handler sends the lines to the application instead of stderr;
 * plugins' lines (host services' log) take the same path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int log_level = BP_LOG_WARN;
static unsigned log_categories = ~0u;
/* Recursive: a handler may log or set the handler while it runs. Held while
 * a line is written, so lines never interleave and bp_log_set_handler
 * returns only once the old handler is no longer running. */
static pthread_mutex_t log_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static bp_log_handler_t log_handler;
static void *log_user_data;

static const char *const level_names[] = {"error", "warn", "info", "debug"};
static const char *const category_names[] = {"loader", "api", "plugin",
                                             "memory"};

const char *bp__getenv(const char *name) { return secure_getenv(name); }

static void log_write_line(bp_log_level_t level, const char *who,
                           const char *line);

/* Returns false when tok is no level, category or "all". */
static bool parse_token(const char *tok, size_t len, bool *any_category) {
  bool known = false;
  for (int i = 0; i < 4; i++)
    if (strlen(level_names[i]) == len && !strncmp(tok, level_names[i], len)) {
      __atomic_store_n(&log_level, i, __ATOMIC_RELAXED);
      known = true;
    }
  if (len == 3 && !strncmp(tok, "all", 3)) {
    log_categories = ~0u;
    *any_category = true;
    known = true;
  }
  for (unsigned c = 0; c < 4; c++) {
    if (strlen(category_names[c]) == len &&
        !strncmp(tok, category_names[c], len)) {
      if (!*any_category) log_categories = 0;
      *any_category = true;
      log_categories |= 1u << c;
      known = true;
    }
  }
  return known || len == 0;
}

/* Runs once (pthread_once), so each unknown word warns once per process,
 * whatever level is set: a misspelt word must not pass silently. */
static void log_configure(void) {
  const char *spec = bp__getenv("BACKPLANE_DEBUG");
  if (!spec) return;
  bool any_category = false;
  while (*spec) {
    size_t len = strcspn(spec, ",");
    if (!parse_token(spec, len, &any_category)) {
      char line[512];
      snprintf(line, sizeof line,
               "BACKPLANE_DEBUG: unknown word '%.*s' ignored (valid: error, "
               "warn, info, debug, loader, api, plugin, memory, all)",
               (int)(len > 64 ? 64 : len), spec);
      log_write_line(BP_LOG_WARN, "api", line);
    }
    spec += len;
    if (*spec == ',') spec++;
  }
}

static bool log_enabled(bp_log_level_t level, unsigned category_bit) {
  pthread_once(&log_once, log_configure);
  return (int)level <= __atomic_load_n(&log_level, __ATOMIC_RELAXED) &&
         (log_categories & category_bit);
}

void bp_log_set_level(bp_log_level_t level) {
  pthread_once(&log_once, log_configure);
  if ((int)level < BP_LOG_ERROR) level = BP_LOG_ERROR;
  if ((int)level > BP_LOG_DEBUG) level = BP_LOG_DEBUG;
  __atomic_store_n(&log_level, (int)level, __ATOMIC_RELAXED);
}

bp_log_level_t bp_log_get_level(void) {
  pthread_once(&log_once, log_configure);
  return (bp_log_level_t)__atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

void bp_log_set_handler(bp_log_handler_t handler, void *user_data) {
  pthread_mutex_lock(&log_lock);
  log_handler = handler;
  log_user_data = user_data;
  pthread_mutex_unlock(&log_lock);
}

static void log_write_line(bp_log_level_t level, const char *who,
                           const char *line) {
  pthread_mutex_lock(&log_lock);
  if (log_handler)
    log_handler(level, who, line, log_user_data);
  else
    fprintf(stderr, "backplane %s [%s]: %s\n", level_names[level], who, line);
  pthread_mutex_unlock(&log_lock);
}

static void log_write(bp_log_level_t level, const char *who, const char *fmt,
                      va_list ap) {
  char line[1024];
  vsnprintf(line, sizeof line, fmt, ap);
  size_t n = strlen(line);
  while (n && line[n - 1] == '\n') line[--n] = '\0';
  log_write_line(level, who, line);
}

void bp__log(bp_log_level_t level, bp__log_category_t cat, const char *fmt,
             ...) {
  if (!log_enabled(level, 1u << cat)) return;
  va_list ap;
  va_start(ap, fmt);
  log_write(level, category_names[cat], fmt, ap);
  va_end(ap);
}

/* ---- host services ---------------------------------------------------------*/

static void host_log(bp_log_level_t level, const char *plugin, const char *fmt,
                     ...) {
  if ((int)level < BP_LOG_ERROR) level = BP_LOG_ERROR;
  if (level > BP_LOG_DEBUG) level = BP_LOG_DEBUG;
  if (!log_enabled(level, 1u << BP__LOG_PLUGIN)) return;
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
