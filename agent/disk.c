/* The disk-backed guest root (`run.root: disk`, issue 9). When the image
   holds /cairn/disk, the workload template is not in the initramfs: it is a
   read-only EROFS image cairn wrote from the canonical tree, attached as the
   first virtio-blk disk (through QEMU's blkreplay driver, so record/replay
   covers its reads). The agent mounts it read-only at /cairn/template, where
   tree_verify checks it like an unpacked template, and every start gets a
   fresh root as an overlay: the template as the lower layer, a new tmpfs as
   the upper one. Nothing is copied per start, so the time to the first
   instruction does not grow with the image. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "agent.h"

#define DISK_MARKER "/cairn/disk"
#define DISK_DEVICE "/dev/vda"

int disk_root(void) {
  static int known = -1;
  if (known < 0) {
    struct stat st;
    known = lstat(DISK_MARKER, &st) == 0 && S_ISREG(st.st_mode);
  }
  return known;
}

int disk_mount(const char *template_dir) {
  if (!disk_root()) return 0;
  /* the node appears (devtmpfs) once virtio_blk has probed the disk; the wait is in guest time */
  struct stat st;
  int i = 0;
  for (; i < 5000 && stat(DISK_DEVICE, &st) < 0; i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  if (mount(DISK_DEVICE, template_dir, "erofs", MS_RDONLY | MS_NODEV | MS_NOSUID, NULL) < 0) {
    /* the template stays an empty directory, so tree_verify reports tree-mismatch: nothing runs */
    diag("cannot mount the root disk %s (errno %d)", DISK_DEVICE, errno);
    return -1;
  }
  return 0;
}

/* "<dir>.rw": the per-start tmpfs holding the overlay's upper and work directories. */
static void scratch_path(const char *dir, char *out, size_t n) { snprintf(out, n, "%s.rw", dir); }

int disk_overlay(const char *template_dir, const char *dir) {
  char rw[300], upper[320], work[320], opts[1024];
  scratch_path(dir, rw, sizeof rw);
  snprintf(upper, sizeof upper, "%s/upper", rw);
  snprintf(work, sizeof work, "%s/work", rw);
  if (mkdir(rw, 0700) < 0 && errno != EEXIST) return -1;
  if (mount("cairn-upper", rw, "tmpfs", MS_NOSUID, "mode=0700") < 0) return -1;
  if (mkdir(upper, 0700) < 0 || mkdir(work, 0700) < 0) return -1;
  snprintf(opts, sizeof opts, "lowerdir=%s,upperdir=%s,workdir=%s", template_dir, upper, work);
  return mount("cairn-root", dir, "overlay", MS_NOSUID, opts);
}

void disk_overlay_destroy(const char *dir) {
  char rw[300];
  scratch_path(dir, rw, sizeof rw);
  umount2(rw, MNT_DETACH);
  rmdir(rw);
}
