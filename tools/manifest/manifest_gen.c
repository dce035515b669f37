/*
 * manifest_gen.c — bp-manifest, the build's manifest writer: writes the
 * backend-<name>.json (or layer-<name>.json) that the loader checks before
 * dlopen (docs/plugin-abi.md section 15). Name, version and ABI come from
 * the library's own descriptor unless given; the SHA-256 is of the file as
 * built, so the manifest must be written after the last change to it.
 *
 *   bp-manifest [--name N --version V --abi MAJOR.MINOR] [--kinds a,b]
 *               [--dlopens a,b] [--portable] LIBRARY OUT.json
 *
 * --portable hashes with the portable code even on a CPU with the SHA
 * extensions (the tests compare both with sha256sum).
 *
 * A build tool, never installed; it shares core/sha256.c with the loader.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer-api.h"
#include "sha256.h"

typedef struct gen_args {
  const char *name, *version, *kinds, *dlopens, *library, *out;
  unsigned major, minor;
  bool abi_given;
} gen_args_t;

static int usage(void) {
  fprintf(stderr, "usage: bp-manifest [--name N --version V --abi MAJOR.MINOR] [--kinds a,b]\n"
                  "                   [--dlopens a,b] [--portable] LIBRARY OUT.json\n");
  return 2;
}

static int parse_args(int argc, char **argv, gen_args_t *a) {
  int i = 1;
  for (; i + 1 < argc && !strncmp(argv[i], "--", 2); i += 2) {
    if (!strcmp(argv[i], "--portable")) {
      bp__sha256_portable_only = true;
      i--;
      continue;
    }
    const char *v = argv[i + 1];
    if (!strcmp(argv[i], "--name"))
      a->name = v;
    else if (!strcmp(argv[i], "--version"))
      a->version = v;
    else if (!strcmp(argv[i], "--kinds"))
      a->kinds = v;
    else if (!strcmp(argv[i], "--dlopens"))
      a->dlopens = v;
    else if (!strcmp(argv[i], "--abi") && sscanf(v, "%u.%u", &a->major, &a->minor) == 2)
      a->abi_given = true;
    else
      return usage();
  }
  if (argc - i != 2) return usage();
  a->library = argv[i];
  a->out = argv[i + 1];
  return 0;
}

/* Name, version and ABI from the library's descriptor (backend or layer). */
static int read_descriptor(gen_args_t *a) {
  void *dl = dlopen(a->library, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    fprintf(stderr, "bp-manifest: %s\n", dlerror());
    return 1;
  }
  const bp_plugin_descriptor_t *p = dlsym(dl, BP_PLUGIN_DESCRIPTOR_SYMBOL);
  const bp_layer_descriptor_t *l = dlsym(dl, BP_LAYER_DESCRIPTOR_SYMBOL);
  if (p && p->magic == BP_PLUGIN_MAGIC) {
    a->name = a->name ? a->name : p->name;
    a->version = a->version ? a->version : p->version;
    if (!a->abi_given) a->major = p->abi_major, a->minor = p->abi_minor;
  } else if (l && l->magic == BP_LAYER_MAGIC) {
    a->name = a->name ? a->name : l->name;
    a->version = a->version ? a->version : l->version;
    if (!a->abi_given) a->major = l->abi_major, a->minor = l->abi_minor;
  } else {
    fprintf(stderr, "bp-manifest: %s has no backplane descriptor\n", a->library);
    return 1;
  }
  return 0; /* never dlclose: the strings above live in the mapping */
}

/* Writes list ("a,b") as a JSON array of strings. */
static void write_list(FILE *f, const char *key, const char *list) {
  fprintf(f, "  \"%s\": [", key);
  const char *p = list ? list : "";
  for (int n = 0; *p; n++) {
    size_t len = strcspn(p, ",");
    if (len) fprintf(f, "%s\"%.*s\"", n ? ", " : "", (int)len, p);
    p += len + (p[len] == ',');
  }
  fprintf(f, "]");
}

int main(int argc, char **argv) {
  gen_args_t a = {0};
  int rc = parse_args(argc, argv, &a);
  if (rc) return rc;
  if ((!a.name || !a.version || !a.abi_given) && read_descriptor(&a)) return 1;
  char hex[65];
  if (bp__sha256_file(a.library, hex) != 0) {
    perror(a.library);
    return 1;
  }
  const char *base = strrchr(a.library, '/');
  FILE *f = fopen(a.out, "w");
  if (!f) {
    perror(a.out);
    return 1;
  }
  fprintf(f, "{\n  \"manifest_version\": 1,\n  \"name\": \"%s\",\n  \"version\": \"%s\",\n", a.name,
          a.version);
  fprintf(f, "  \"abi_major\": %u,\n  \"abi_minor\": %u,\n  \"library\": \"%s\",\n", a.major,
          a.minor, base ? base + 1 : a.library);
  write_list(f, "kinds", a.kinds);
  fprintf(f, ",\n");
  write_list(f, "dlopens", a.dlopens);
  fprintf(f, ",\n  \"sha256\": \"%s\"\n}\n", hex);
  return fclose(f) == 0 ? 0 : 1;
}
