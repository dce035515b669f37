/*
 * cpu_features.c — what this CPU and this OS let the plugin use.
 *
 * A feature counts only when CPUID reports it AND the OS saves the register
 * state it needs (XCR0, read with XGETBV after checking OSXSAVE): a kernel
 * or hypervisor may hide AVX-512 state even on a CPU that has it, and using
 * the registers then faults. AMX additionally needs a per-process permission
 * from Linux (arch_prctl ARCH_REQ_XCOMP_PERM), requested by
 * cpu_amx_request() only when a kernel is about to use tiles.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define CPU_X86 1
#else
#define CPU_X86 0
#endif

/* XCR0 state components (Intel SDM vol. 1, 13.1). */
#define XCR0_SSE (1ull << 1)
#define XCR0_AVX (1ull << 2)
#define XCR0_OPMASK (1ull << 5)
#define XCR0_ZMM_HI256 (1ull << 6)
#define XCR0_HI16_ZMM (1ull << 7)
#define XCR0_TILECFG (1ull << 17)
#define XCR0_TILEDATA (1ull << 18)

#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static cpu_features_t g_features;
static pthread_once_t g_features_once = PTHREAD_ONCE_INIT;

#if CPU_X86
static bool bit(unsigned reg, unsigned n) { return (reg >> n) & 1u; }

static uint64_t read_xcr0(void) {
  uint32_t lo, hi;
  /* Inline asm rather than _xgetbv(), which needs -mxsave on the file. */
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

static void read_brand(char out[64]) {
  unsigned regs[12] = {0}, max_ext = __get_cpuid_max(0x80000000u, NULL);
  if (max_ext < 0x80000004u)
    return;
  for (unsigned i = 0; i < 3; i++)
    __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1],
                &regs[4 * i + 2], &regs[4 * i + 3]);
  memcpy(out, regs, 48);
  out[48] = '\0';
  /* Intel pads the brand string with leading spaces. */
  size_t skip = strspn(out, " ");
  memmove(out, out + skip, strlen(out + skip) + 1);
}

static void detect(void) {
  cpu_features_t *f = &g_features;
  unsigned a, b, c, d;
  read_brand(f->brand);
  __cpuid(0, a, b, c, d);
  f->vendor_amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u; /* AuthenticAMD */
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return;
  bool osxsave = bit(c, 27), avx = bit(c, 28);
  bool fma = bit(c, 12), f16c = bit(c, 29);
  if (!osxsave || !avx)
    return; /* no OS-managed AVX state: scalar/SSE only */
  uint64_t xcr0 = read_xcr0();
  bool os_ymm = (xcr0 & (XCR0_SSE | XCR0_AVX)) == (XCR0_SSE | XCR0_AVX);
  uint64_t zmm_mask = XCR0_OPMASK | XCR0_ZMM_HI256 | XCR0_HI16_ZMM;
  bool os_zmm = os_ymm && (xcr0 & zmm_mask) == zmm_mask;
  bool os_amx =
      (xcr0 & (XCR0_TILECFG | XCR0_TILEDATA)) == (XCR0_TILECFG | XCR0_TILEDATA);
  if (!os_ymm)
    return;
  f->fma = fma;
  f->f16c = f16c;
  if (__get_cpuid_max(0, NULL) < 7)
    return;
  unsigned b7, c7, d7, a71 = 0, tmp;
  __cpuid_count(7, 0, a, b7, c7, d7);
  unsigned max_sub = a;
  if (max_sub >= 1)
    __cpuid_count(7, 1, a71, tmp, tmp, tmp);
  f->avx2 = bit(b7, 5);
  if (os_zmm) {
    f->avx512f = bit(b7, 16);
    f->avx512dq = bit(b7, 17);
    f->avx512bw = bit(b7, 30);
    f->avx512vl = bit(b7, 31);
    f->avx512_vnni = bit(c7, 11);
    f->avx512_fp16 = bit(d7, 23);
    f->avx512_bf16 = bit(a71, 5);
  }
  if (os_amx) {
    f->amx_bf16 = bit(d7, 22);
    f->amx_tile = bit(d7, 24);
    f->amx_int8 = bit(d7, 25);
  }
}
#else
static void detect(void) {}
#endif

const cpu_features_t *cpu_features_get(void) {
  pthread_once(&g_features_once, detect);
  return &g_features;
}

bp_isa_level_t cpu_isa_detect(void) {
  const cpu_features_t *f = cpu_features_get();
  if (f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->fma)
    return BP_ISA_AVX512;
  if (f->avx2 && f->fma && f->f16c)
    return BP_ISA_AVX2;
  return BP_ISA_SCALAR;
}

static bool g_amx_granted;
static pthread_once_t g_amx_once = PTHREAD_ONCE_INIT;

static void amx_request_once(void) {
#if CPU_X86 && defined(__linux__) && defined(SYS_arch_prctl)
  if (!cpu_features_get()->amx_tile)
    return;
  if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0)
    return;
  /* Confirm: the permission is process-wide once granted. */
  unsigned long perm = 0;
  if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &perm) == 0)
    g_amx_granted = (perm >> XFEATURE_XTILEDATA) & 1ul;
#endif
}

bool cpu_amx_request(void) {
  pthread_once(&g_amx_once, amx_request_once);
  return g_amx_granted;
}

unsigned cpu_count_online(void) {
  /* The affinity mask, not the machine's CPU count: taskset and cgroup
   * cpusets restrict where we may run. Grow the set for very large hosts. */
  for (size_t ncpu = 1024; ncpu <= (1u << 20); ncpu *= 2) {
    cpu_set_t *set = CPU_ALLOC(ncpu);
    if (!set)
      break;
    size_t bytes = CPU_ALLOC_SIZE(ncpu);
    CPU_ZERO_S(bytes, set);
    if (sched_getaffinity(0, bytes, set) == 0) {
      int n = CPU_COUNT_S(bytes, set);
      CPU_FREE(set);
      return n > 0 ? (unsigned)n : 1u;
    }
    CPU_FREE(set);
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)n : 1u;
}
