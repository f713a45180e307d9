/* Boot-time plumbing of the agent: the kernel modules for the protocol
   port, the port itself, and leaving the VM with a status QEMU reports. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "agent.h"

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Loads /cairn/modules/NN-name.ko in name order (the host wrote them in
   dependency order). Returns 0, or -1 after the first failure. */
static int load_modules(void) {
  DIR *d = opendir("/cairn/modules");
  if (!d) return -1;
  char *names[64];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 64)
    if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, name_cmp);
  int rc = 0;
  for (int i = 0; i < n; i++) {
    char path[320];
    snprintf(path, sizeof path, "/cairn/modules/%s", names[i]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (rc == 0 && (fd < 0 || syscall(SYS_finit_module, fd, "", 0) < 0)) {
      diag("cannot load %s (errno %d)", names[i], errno);
      rc = -1;
    }
    if (fd >= 0) close(fd);
    free(names[i]);
  }
  return rc;
}

/* Finds and opens the virtio-serial protocol port. Its device node appears
   (devtmpfs) and becomes openable shortly after the driver probes; the wait
   is in guest time, so it is the same in record and replay. */
static int open_port(void) {
  char port[300] = "";
  for (int i = 0; i < 5000; i++) {
    DIR *d = opendir("/dev");
    struct dirent *e;
    while (d && (e = readdir(d)))
      if (!strncmp(e->d_name, "vport", 5)) snprintf(port, sizeof port, "/dev/%s", e->d_name);
    if (d) closedir(d);
    if (port[0] && proto_open(port) == 0) return 0;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  diag("no protocol port (%s)", port[0] ? port : "no /dev/vport*");
  return -1;
}

void power_off(int status) {
  /* isa-debug-exit: QEMU exits with (value << 1) | 1 */
  if (ioperm(0xf4, 4, 1) == 0) outb((unsigned char)status, 0xf4);
  reboot(RB_POWER_OFF);
  for (;;) pause();
}

int boot_transport(void) {
  return load_modules() < 0 || open_port() < 0 ? -1 : 0;
}
