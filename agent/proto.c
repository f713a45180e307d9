/* The protocol writer: every record goes to the protocol port (virtio-serial) as
   u32 length | u8 type | u64 sequence | u32 invocation | body, little-endian,
   after an 8-byte magic. The sequence is one monotonic counter across all
   records and streams. The final record carries the sha256 of every byte
   written before it, so the host detects a damaged or cut transport. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include "agent.h"

static int fd = -1;
static uint64_t seq;
static sha256_ctx stream;
static int failed;

int proto_failed(void) { return failed; }

static int put_all(const uint8_t *p, size_t n) {
  if (failed) return -1;
  sha256_update(&stream, p, n);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      failed = 1;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int proto_open(const char *port) {
  fd = open(port, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct termios t;
  if (tcgetattr(fd, &t) == 0) { /* should the port ever be a tty, it must be raw */
    cfmakeraw(&t);
    cfsetispeed(&t, B115200);
    cfsetospeed(&t, B115200);
    tcsetattr(fd, TCSANOW, &t);
  }
  sha256_init(&stream);
  return put_all((const uint8_t *)"CAIRNPR1", 8);
}

static void le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Writes one record: header, then `body` (bn bytes), then `tail` (tn bytes). */
static int record(uint8_t type, uint32_t inv, const uint8_t *body, size_t bn, const uint8_t *tail, size_t tn) {
  uint8_t h[17];
  le(h, 13 + bn + tn, 4);
  h[4] = type;
  le(h + 5, seq++, 8);
  le(h + 13, inv, 4);
  if (put_all(h, sizeof h) < 0) return -1;
  if (bn && put_all(body, bn) < 0) return -1;
  if (tn && put_all(tail, tn) < 0) return -1;
  return 0;
}

int rec_simple(uint8_t type, uint32_t inv) { return record(type, inv, NULL, 0, NULL, 0); }

int rec_hello(void) {
  uint8_t b[4];
  le(b, PROTOCOL_VERSION, 4);
  return record(REC_HELLO, 0, b, 4, NULL, 0);
}

int rec_frame(uint32_t inv, uint8_t stream_id, uint64_t offset, const uint8_t *data, uint32_t n) {
  uint8_t b[9];
  b[0] = stream_id;
  le(b + 1, offset, 8);
  return record(REC_FRAME, inv, b, 9, data, n);
}

int rec_input(uint8_t type, uint32_t inv, uint64_t offset, uint32_t n) {
  uint8_t b[12];
  le(b, offset, 8);
  le(b + 8, n, 4);
  return record(type, inv, b, 12, NULL, 0);
}

int rec_exit(uint32_t inv, uint8_t kind, uint32_t code, const uint64_t totals[2], const uint8_t digests[2][32]) {
  uint8_t b[1 + 4 + 16 + 64];
  b[0] = kind;
  le(b + 1, code, 4);
  le(b + 5, totals[0], 8);
  le(b + 13, totals[1], 8);
  memcpy(b + 21, digests[0], 32);
  memcpy(b + 53, digests[1], 32);
  return record(REC_EXIT, inv, b, sizeof b, NULL, 0);
}

int rec_launch_failure(uint32_t inv, uint8_t stage, uint32_t err) {
  uint8_t b[5];
  b[0] = stage;
  le(b + 1, err, 4);
  return record(REC_LAUNCH_FAILURE, inv, b, 5, NULL, 0);
}

int rec_cleanup(uint32_t inv, uint32_t killed) {
  uint8_t b[4];
  le(b, killed, 4);
  return record(REC_CLEANUP_COMPLETE, inv, b, 4, NULL, 0);
}

int rec_infra(uint32_t inv, uint8_t reason, uint64_t detail) {
  uint8_t b[9];
  b[0] = reason;
  le(b + 1, detail, 8);
  return record(REC_INFRA_FAILURE, inv, b, 9, NULL, 0);
}

int rec_final(uint8_t status, uint32_t invocations) {
  uint8_t b[1 + 4 + 32];
  b[0] = status;
  le(b + 1, invocations, 4);
  sha256_ctx copy = stream;
  sha256_final(&copy, b + 5);
  int r = record(REC_FINAL, 0, b, sizeof b, NULL, 0);
  if (fd >= 0 && tcdrain(fd) < 0) fsync(fd);
  return r;
}

int rec_hold(uint32_t inv, uint32_t hold, uint32_t next_step, uint64_t stdin_offset) {
  uint8_t b[16];
  le(b, hold, 4);
  le(b + 4, next_step, 4);
  le(b + 8, stdin_offset, 8);
  return record(REC_HOLD, inv, b, sizeof b, NULL, 0);
}
