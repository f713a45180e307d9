/* Opt-in parts of the runtime overlay (issue 9, item 4), named in the guest
   image as /cairn/overlay (one word a line, covered by the image digest):
     proc     /proc in the workload's root (proc, hidepid=2: the workload
              sees only processes of its own uid, never the agent) and /sys
              read-only (sysfs); both directories 0:0 0555 mtime 0
     urandom  /dev/random (1,8) and /dev/urandom (1,9), 0:0 0666 mtime 0
   Without the file the overlay is cairn.overlay/1 as it was. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "agent.h"

static int flags = -1; /* bit 0 proc, bit 1 urandom */

static int load(void) {
  if (flags >= 0) return flags;
  flags = 0;
  int fd = open("/cairn/overlay", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return flags;
  char buf[64] = {0};
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n > 0) {
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
      if (!strcmp(line, "proc")) flags |= 1;
      if (!strcmp(line, "urandom")) flags |= 2;
    }
  }
  return flags;
}

int guestfs_proc(void) { return load() & 1; }

int guestfs_dev(int devfd) {
  if (!(load() & 2)) return 0;
  if (mknodat(devfd, "random", S_IFCHR | 0666, makedev(1, 8)) < 0) return -1;
  if (mknodat(devfd, "urandom", S_IFCHR | 0666, makedev(1, 9)) < 0) return -1;
  struct timespec ts[2] = {{0, 0}, {0, 0}};
  if (fchmodat(devfd, "random", 0666, 0) < 0 || fchmodat(devfd, "urandom", 0666, 0) < 0) return -1;
  if (utimensat(devfd, "random", ts, 0) < 0 || utimensat(devfd, "urandom", ts, 0) < 0) return -1;
  return 0;
}

int guestfs_mount(const char *root) {
  if (!guestfs_proc()) return 0;
  char path[320];
  snprintf(path, sizeof path, "%s/proc", root);
  if (mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") < 0) return -1;
  snprintf(path, sizeof path, "%s/sys", root);
  return mount("sysfs", path, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}
