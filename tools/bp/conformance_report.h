/*
 * conformance_report.h — results of a conformance run and their renderings:
 * a table for people, TAP, JUnit XML and JSON for machines.
 */
#ifndef BP_CONFORMANCE_REPORT_H
#define BP_CONFORMANCE_REPORT_H

#include <stdio.h>

#include "conformance.h"

typedef struct cf_record {
  char *plugin, *device, *stage, *name, *detail;
  cf_result_t result;
  double seconds;
} cf_record_t;

typedef struct cf_report {
  cf_record_t *rec;
  int n, cap;
  char **xfail; /* "backend/case-prefix" patterns */
  int nxfail;
} cf_report_t;

void cf_report_init(cf_report_t *r);
void cf_report_free(cf_report_t *r);
/* Loads expected failures; false when the file cannot be read. */
bool cf_report_load_xfail(cf_report_t *r, const char *path);
/* Adds a result, turning FAIL into XFAIL and PASS into XPASS when listed. */
void cf_report_add(cf_report_t *r, const char *plugin, const char *device, const char *stage,
                   const char *name, cf_result_t result, const char *detail, double seconds);
/* Number of FAIL and CRASH results. */
int cf_report_failures(const cf_report_t *r);
void cf_report_table(const cf_report_t *r, FILE *f);
void cf_report_tap(const cf_report_t *r, FILE *f);
void cf_report_junit(const cf_report_t *r, const char *path);
void cf_report_json(const cf_report_t *r, const char *path);

#endif
