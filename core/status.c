/*
 * status.c — status names and messages (one table, from BP_STATUS_MAP) and
 * the thread-local error message behind bp_last_error.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define BP__MSG_SIZE 1024

static _Thread_local char tls_message[BP__MSG_SIZE];
/* What a plugin said through host set_error during the current call. */
static _Thread_local char tls_plugin_message[BP__MSG_SIZE];

const char *bp_status_string(bp_status_t status) {
  switch (status) {
#define BP__STATUS_STR(name, value, msg)                                       \
  case BP_##name:                                                              \
    return msg;
    BP_STATUS_MAP(BP__STATUS_STR)
#undef BP__STATUS_STR
  }
  return "unknown status";
}

const char *bp_status_name(bp_status_t status) {
  switch (status) {
#define BP__STATUS_NAME(name, value, msg)                                      \
  case BP_##name:                                                              \
    return "BP_" #name;
    BP_STATUS_MAP(BP__STATUS_NAME)
#undef BP__STATUS_NAME
  }
  return "BP_UNKNOWN";
}

const char *bp_last_error(void) { return tls_message; }

const char *bp_version(void) { return BP_VERSION_STRING; }

void bp__clear_error(void) {
  tls_message[0] = '\0';
  tls_plugin_message[0] = '\0';
}

bp_status_t bp__fail(bp_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tls_message, sizeof tls_message, fmt, ap);
  va_end(ap);
  bp__log(BP_LOG_DEBUG, BP__LOG_API, "%s: %s", bp_status_name(status),
          tls_message);
  return status;
}

void bp__set_error_v(const char *fmt, va_list ap) {
  vsnprintf(tls_plugin_message, sizeof tls_plugin_message, fmt, ap);
}

const char *bp__plugin_error(void) { return tls_plugin_message; }

void bp__plugin_error_reset(void) { tls_plugin_message[0] = '\0'; }
