/* The checkpoint bench's workload (bench/checkpoint/bench.ts): reads commands
   on stdin like tests/vm/fixtures/probe.c. "touch N" writes N MiB of
   pseudo-random bytes into a buffer it keeps (so savevm cannot skip them as
   zero pages); "sleep MS" says "sleeping", idles MS guest milliseconds (under
   icount sleep=on, wall time too: the window in which the host takes its
   checkpoints) and says "slept MS". */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(void) {
  char line[256];
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("ready\n");
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = 0;
    char *arg = strchr(line, ' ');
    if (arg) *arg++ = 0;
    if (!strcmp(line, "touch") && arg) {
      size_t n = (size_t)atol(arg) << 20;
      uint64_t *b = malloc(n ? n : 1), x = 0x9e3779b97f4a7c15ull;
      if (!b) {
        printf("touch-failed\n");
        return 2;
      }
      for (size_t i = 0; i < n / 8; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = x;
      }
      printf("touched %s\n", arg); /* b is kept: its pages stay in guest RAM */
    } else if (!strcmp(line, "sleep") && arg) {
      long ms = atol(arg);
      struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
      printf("sleeping\n");
      while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
      }
      printf("slept %ld\n", ms);
    } else if (!strcmp(line, "exit")) {
      return 0;
    }
  }
  printf("eof\n");
  return 0;
}
