/* The bench's workload: prints the SHA-256 of the file it is given (the
   last file of the tree in write order), or exits at once without one (the
   time to the workload's first instruction). Linked with the agent's own
   sha256.c; built with gcc -static at bench time. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include "../../agent/agent.h"

int main(int argc, char **argv) {
  if (argc < 2) return 0;
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  static unsigned char buf[1 << 16];
  sha256_ctx c;
  sha256_init(&c);
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) sha256_update(&c, buf, (size_t)n);
  if (n < 0) return 1;
  unsigned char d[32];
  sha256_final(&c, d);
  for (int i = 0; i < 32; i++) printf("%02x", d[i]);
  printf("  %s\n", argv[1]);
  return 0;
}
