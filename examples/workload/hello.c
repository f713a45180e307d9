/* The bundled example workload: prints its arguments, one environment
 * variable and its working directory, then exits 0. Built with
 * `gcc -static -no-pie -O2 -o hello hello.c` (see docs/workload.md). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
  char cwd[4096];
  const char *greeting = getenv("GREETING");
  printf("%s from %s", greeting ? greeting : "hello", argv[0]);
  for (int i = 1; i < argc; i++) printf(" %s", argv[i]);
  printf("\ncwd=%s uid=%d gid=%d\n", getcwd(cwd, sizeof cwd) ? cwd : "?", (int)getuid(), (int)getgid());
  return 0;
}
