/* several_devices.c — work on two devices ordered by an event: device A
 * fills a vector, device B waits for A's event, copies the vector over
 * (bp_buffer_copy_async on B's stream) and doubles it, and the host reads
 * the result from B. A is "cpu"; B is the first of opencl, vulkan and
 * cpu-ref that opens. */
#include <backplane.h>
#include <stdio.h>

#define N 4096

static int fail(const char *what) {
  fprintf(stderr, "%s: %s\n", what, bp_last_error());
  return 1;
}

int main(void) {
  bp_context_t *ctx;
  bp_device_t *a, *b = NULL;
  if (bp_context_create(NULL, &ctx) != BP_OK) return fail("bp_context_create");
  if (bp_device_open(ctx, "cpu", NULL, &a) != BP_OK) return fail("bp_device_open cpu");
  const char *second[] = {"opencl", "vulkan", "cpu-ref"};
  for (int i = 0; i < 3 && !b; i++)
    if (bp_device_open(ctx, second[i], NULL, &b) != BP_OK) b = NULL;
  if (!b) return fail("bp_device_open (a second device)");
  bp_device_entry_t ea, eb;
  bp_device_entry(a, &ea);
  bp_device_entry(b, &eb);
  printf("A: %s (%s), B: %s (%s)\n", ea.info.name, ea.backend, eb.info.name, eb.backend);

  bp_stream_t *sa, *sb;
  bp_buffer_t *xa, *xb;
  bp_event_t *filled;
  bp_tensor_t ta, tb;
  int64_t n = N;
  if (bp_stream_create(a, &sa) != BP_OK || bp_stream_create(b, &sb) != BP_OK)
    return fail("bp_stream_create");
  if (bp_buffer_alloc(a, N * sizeof(float), &xa) != BP_OK ||
      bp_buffer_alloc(b, N * sizeof(float), &xb) != BP_OK)
    return fail("bp_buffer_alloc");
  if (bp_event_create(a, &filled) != BP_OK) return fail("bp_event_create");
  bp_tensor_init(xa, 0, BP_F32, 1, &n, NULL, &ta);
  bp_tensor_init(xb, 0, BP_F32, 1, &n, NULL, &tb);

  /* A: fill, then mark the point B must wait for. */
  if (bp_fill(sa, &ta, 1.5) != BP_OK) return fail("bp_fill");
  if (bp_event_record(filled, sa) != BP_OK) return fail("bp_event_record");
  /* B: wait for A's event (another device: the core waits on the host),
   * copy A's vector over on B's stream, double it. */
  if (bp_stream_wait_event(sb, filled) != BP_OK) return fail("bp_stream_wait_event");
  if (bp_buffer_copy_async(sb, xb, 0, xa, 0, N * sizeof(float)) != BP_OK)
    return fail("bp_buffer_copy_async");
  if (bp_binary(sb, BP_BINARY_ADD, &tb, &tb, &tb) != BP_OK) return fail("bp_binary");
  if (bp_stream_synchronize(sb) != BP_OK) return fail("bp_stream_synchronize");

  float y[N];
  if (bp_buffer_read(xb, 0, y, sizeof y) != BP_OK) return fail("bp_buffer_read");
  for (int i = 0; i < N; i++)
    if (y[i] != 3.0f) {
      fprintf(stderr, "element %d is %g, expected 3\n", i, y[i]);
      return 1;
    }
  printf("B holds 2 x 1.5 = %g in all %d elements\n", y[0], N);

  bp_event_destroy(filled);
  bp_buffer_free(xa);
  bp_buffer_free(xb);
  bp_stream_destroy(sa);
  bp_stream_destroy(sb);
  bp_device_close(a);
  bp_device_close(b);
  bp_context_destroy(ctx);
  return 0;
}
