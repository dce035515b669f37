/*
 * json_doc.h — the JSON of the bp command, read and written with json-c.
 *
 * Every JSON document bp writes (devices, run, bench, tune, conformance) is
 * built as a json-c tree from these constructors and written by
 * bpt_json_write, which keeps bp's established layout (one record per line)
 * while json-c does the escaping and the number text. Every JSON bp reads
 * (the PyTorch helper's lines) is parsed by json-c.
 *
 * Ownership follows json-c: each constructor returns a new reference, which
 * bpt_json_set / bpt_json_push take over; json_object_put(root) frees a
 * whole document. A NULL json_object * is JSON null.
 */
#ifndef BP_TOOL_JSON_DOC_H
#define BP_TOOL_JSON_DOC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

/* A JSON string holding s. Bytes that are not valid UTF-8 become U+FFFD, so
 * the document is valid UTF-8 whatever a driver or plugin put in a name;
 * s == NULL gives null. */
json_object *bpt_json_str(const char *s);
/* A JSON number written with the printf format fmt (one double conversion,
 * e.g. "%.6g"); NaN and infinities give null, never the non-JSON NaN. */
json_object *bpt_json_num(double v, const char *fmt);
/* A JSON integer. */
json_object *bpt_json_int(int64_t v);
/* A JSON true or false. */
json_object *bpt_json_bool(bool v);

/* Adds key: v to object obj (taking v over); keys keep insertion order. */
void bpt_json_set(json_object *obj, const char *key, json_object *v);
/* Appends v to array arr (taking v over). */
void bpt_json_push(json_object *arr, json_object *v);

/* Writes doc and a newline to f. The root and every container under a key
 * listed in broken (a NULL-terminated list, or NULL) are written one member
 * per line, indented by two; everything else on one line as
 * {"key": value, ...}. Returns false when f reports a write error. */
bool bpt_json_write(FILE *f, json_object *doc, const char *const *broken);
/* bpt_json_write to the file path ("-": stdout), then frees doc. Prints why
 * on stderr (after "bp SUB: ") and returns false when it cannot write. */
bool bpt_json_write_path(const char *sub, const char *path, json_object *doc,
                         const char *const *broken);

/* Parses one JSON text (a whole line or file); NULL when it is not JSON.
 * The caller owns the result (json_object_put). */
json_object *bpt_json_parse(const char *text);
/* The member key of obj as a double; fallback when absent, null or not a
 * number. */
double bpt_json_get_num(json_object *obj, const char *key, double fallback);
/* The member key of obj as a string borrowed from obj; NULL when absent or
 * not a string. */
const char *bpt_json_get_str(json_object *obj, const char *key);
/* The member key of obj as a boolean; false when absent or not a boolean. */
bool bpt_json_get_bool(json_object *obj, const char *key);

#endif /* BP_TOOL_JSON_DOC_H */
