/* The input channel of a run with checkpoints: the second serial port
   (/dev/ttyS1, QEMU's -serial backed by a host socket). QEMU records every
   byte it delivers there in the replay log, so a replay gets the same
   bytes at the same instruction with no host writing anything. The host
   answers each hold with one message:
     "CAIRNCH1" | u32 hold | u8 kind | u32 length | body
   kind 1 (continue) has an empty body; kind 2 (tail) carries the steps that
   replace the rest of the scenario (u32 count, then steps as in
   /cairn/inputs). Little-endian, like every format of the agent.

   Flow control: a replayed serial port is handed each byte the host wrote
   without regard for its 16-byte receive FIFO (QEMU records the socket's
   reads and delivers them later), so a longer write overruns it and loses a
   byte. The host therefore writes CHAN_CHUNK bytes at a time and waits for
   the agent's ACK byte, which the agent writes back on the port after every
   CHAN_CHUNK bytes it has read and at the end of each message. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include "agent.h"

static int cfd = -1;
static uint64_t got; /* bytes of the current message read so far */

#define CHAN_CHUNK 16
#define CHAN_ACK 0x06

int chan_open(void) {
  cfd = open("/dev/ttyS1", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (cfd < 0) return -1;
  struct termios t;
  if (tcgetattr(cfd, &t) < 0) return -1;
  cfmakeraw(&t); /* no echo, no line discipline: the host's bytes arrive as sent */
  cfsetispeed(&t, B115200);
  cfsetospeed(&t, B115200);
  t.c_cc[VMIN] = 1;
  t.c_cc[VTIME] = 0;
  return tcsetattr(cfd, TCSANOW, &t);
}

static int ack(void) {
  uint8_t a = CHAN_ACK;
  for (;;) {
    ssize_t w = write(cfd, &a, 1);
    if (w == 1) return 0;
    if (w < 0 && errno == EINTR) continue;
    return -1;
  }
}

/* Reads exactly n bytes (blocking), acknowledging each chunk the host sent. */
static int read_all(uint8_t *p, size_t n) {
  while (n > 0) {
    size_t want = CHAN_CHUNK - got % CHAN_CHUNK; /* never past a chunk's end: the ack comes between chunks */
    if (want > n) want = n;
    ssize_t r = read(cfd, p, want);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
    got += (uint64_t)r;
    if (got % CHAN_CHUNK == 0 && ack() < 0) return -1;
  }
  return 0;
}

/* The message is whole: its last, shorter chunk is acknowledged too. */
static int end_message(void) {
  int r = got % CHAN_CHUNK != 0 ? ack() : 0;
  got = 0;
  return r;
}

static uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

int chan_wait(uint32_t hold, uint32_t *nsteps, struct step **steps, uint64_t *detail) {
  uint8_t h[17];
  if (cfd < 0) return *detail = CHAN_FAIL_OPEN, -1;
  got = 0;
  if (read_all(h, sizeof h) < 0) return *detail = CHAN_FAIL_READ, -1;
  if (memcmp(h, "CAIRNCH1", 8) != 0) return *detail = CHAN_FAIL_MAGIC, -1;
  if (le(h + 8, 4) != hold) return *detail = CHAN_FAIL_HOLD, -1;
  uint8_t kind = h[12];
  uint64_t len = le(h + 13, 4);
  if (len > CHANNEL_MAX) return *detail = CHAN_FAIL_SIZE, -1;
  if (kind == CHAN_CONTINUE) {
    if (len != 0) return *detail = CHAN_FAIL_SIZE, -1;
    return end_message() < 0 ? (*detail = CHAN_FAIL_READ, -1) : CHAN_CONTINUE;
  }
  if (kind != CHAN_TAIL) return *detail = CHAN_FAIL_KIND, -1;
  uint8_t *body = malloc(len + 1); /* kept: the steps point into it */
  if (!body || read_all(body, len) < 0 || end_message() < 0) return *detail = CHAN_FAIL_READ, -1;
  if (steps_parse(body, len, nsteps, steps) < 0) return *detail = CHAN_FAIL_STEPS, -1;
  return CHAN_TAIL;
}
