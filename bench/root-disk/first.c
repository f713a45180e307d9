/* The big-image bench's workload: prints a line at once (its first output:
   the time to the workload's first instruction, as the host sees it), then
   the SHA-256 of the first MiB of the file it is given (read from the root
   disk, so the guest shows it sees the image's bytes). Linked with the
   agent's own sha256.c; built with gcc -static at bench time. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include "../../agent/agent.h"

int main(int argc, char **argv) {
  printf("first output\n");
  fflush(stdout);
  if (argc < 2) return 0;
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  static unsigned char buf[1 << 20];
  size_t have = 0;
  ssize_t n;
  while (have < sizeof buf && (n = read(fd, buf + have, sizeof buf - have)) > 0) have += (size_t)n;
  sha256_ctx c;
  sha256_init(&c);
  sha256_update(&c, buf, have);
  unsigned char d[32];
  sha256_final(&c, d);
  for (int i = 0; i < 32; i++) printf("%02x", d[i]);
  printf("\n");
  return 0;
}
