/* A fresh writable root per start. Each start mounts a new tmpfs (so nothing
   a previous invocation wrote can survive) and either overlays it on the
   read-only root disk (disk.c) or copies the immutable template
   (/cairn/template, unpacked by the kernel from the initramfs) into it
   reproducing bytes, modes, owners, mtimes and symlinks, then applies the
   runtime overlay cairn.overlay/1:
     /tmp  directory, 0:0, mode 01777, mtime 0, empty
     /dev  directory, 0:0, mode 0755, mtime 0, holding only
           /dev/null (1,3) and /dev/zero (1,5), character devices, 0:0, 0666, mtime 0
   A package entry at /tmp or /dev must be a directory (its metadata is
   replaced); empty directories below them (Debian's /dev/pts, /dev/shm)
   are removed from the fresh root, as the workload RFD accepts them (the
   host refused anything else below them: src/vm/initramfs.ts checkOverlay);
   any other entry below them collides and the start is refused.
   No /proc, /sys or entropy device is created. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "agent.h"

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int meta(int dirfd, const char *name, const struct stat *st, int is_link) {
  int flags = is_link ? AT_SYMLINK_NOFOLLOW : 0;
  if (fchownat(dirfd, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0) return -1;
  if (!is_link && fchmodat(dirfd, name, st->st_mode & 07777, 0) < 0) return -1;
  struct timespec ts[2] = {st->st_mtim, st->st_mtim};
  ts[0].tv_nsec = ts[1].tv_nsec = 0;
  return utimensat(dirfd, name, ts, flags);
}

static int copy_file(int sfd, int dfd, const char *name) {
  int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0) return -1;
  int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0) {
    close(in);
    return -1;
  }
  static uint8_t buf[65536];
  int rc = 0;
  for (;;) {
    ssize_t r = read(in, buf, sizeof buf);
    if (r == 0) break;
    if (r < 0) {
      rc = -1;
      break;
    }
    for (ssize_t off = 0; off < r;) {
      ssize_t w = write(out, buf + off, (size_t)(r - off));
      if (w <= 0) {
        rc = -1;
        break;
      }
      off += w;
    }
    if (rc) break;
  }
  close(in);
  close(out);
  return rc;
}

/* Copies the children of sfd into dfd, depth first; directory metadata is
   applied after their children so their mtimes are not disturbed. */
static int copy_dir(int sfd, int dfd) {
  int dup_fd = dup(sfd);
  DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
  if (!d) return -1;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  int rc = 0;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 32;
      char **grown = realloc(names, cap * sizeof *names);
      if (!grown) {
        rc = -1; /* out of memory: a partial copy must fail, never pass as the whole root */
        break;
      }
      names = grown;
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp);
  for (size_t i = 0; i < n && rc == 0; i++) {
    const char *name = names[i];
    struct stat st;
    if (!name || fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      rc = -1;
      break;
    }
    if (S_ISDIR(st.st_mode)) {
      if (mkdirat(dfd, name, 0700) < 0) rc = -1;
      int cs = rc ? -1 : openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      int cd = cs < 0 ? -1 : openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (cs < 0 || cd < 0 || copy_dir(cs, cd) < 0) rc = -1;
      if (cs >= 0) close(cs);
      if (cd >= 0) close(cd);
      if (rc == 0) rc = meta(dfd, name, &st, 0);
    } else if (S_ISREG(st.st_mode)) {
      rc = copy_file(sfd, dfd, name);
      if (rc == 0) rc = meta(dfd, name, &st, 0);
    } else if (S_ISLNK(st.st_mode)) {
      char target[4097];
      ssize_t len = readlinkat(sfd, name, target, sizeof target - 1);
      if (len < 0) {
        rc = -1;
      } else {
        target[len] = 0;
        rc = symlinkat(target, dfd, name);
        if (rc == 0) rc = meta(dfd, name, &st, 1);
      }
    } else {
      errno = EINVAL; /* the template only ever holds dirs, files and symlinks */
      rc = -1;
    }
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return rc;
}

/* Removes every entry below the directory fd, each of which must be a
   directory holding only directories; anything else fails with ENOTEMPTY. */
static int clear_empty_dirs(int dfd, int depth) {
  if (depth > 64) {
    errno = ELOOP;
    return -1;
  }
  int fd = dup(dfd);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  if (!d) return -1;
  struct dirent *e;
  int rc = 0;
  while (!rc && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    struct stat st;
    if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) rc = -1;
    else if (!S_ISDIR(st.st_mode)) {
      errno = ENOTEMPTY;
      rc = -1;
    } else {
      int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0 || clear_empty_dirs(sub, depth + 1) < 0) rc = -1;
      if (sub >= 0) close(sub);
      if (!rc && unlinkat(dfd, e->d_name, AT_REMOVEDIR) < 0) rc = -1;
      if (!rc) rewinddir(d); /* the directory changed under readdir */
    }
  }
  int saved = errno;
  closedir(d);
  errno = saved;
  return rc;
}

/* Prepares an overlay directory: must be absent or a directory; `clear`:
   empty directories below it are removed, else it must be empty. */
static int overlay_dir(int rootfd, const char *name, mode_t mode, int clear) {
  struct stat st;
  if (fstatat(rootfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      errno = EEXIST;
      return -1;
    }
    int fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (clear && fd >= 0 && clear_empty_dirs(fd, 0) < 0) {
      int saved = errno;
      close(fd);
      errno = saved;
      return -1;
    }
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) return -1;
    struct dirent *e;
    int children = 0;
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) children++;
    closedir(d);
    if (children) {
      errno = ENOTEMPTY;
      return -1;
    }
  } else if (mkdirat(rootfd, name, 0700) < 0) {
    return -1;
  }
  struct stat want = {0};
  want.st_mode = mode;
  return meta(rootfd, name, &want, 0);
}

static int overlay(int rootfd) {
  if (overlay_dir(rootfd, "tmp", 01777, 1) < 0 || overlay_dir(rootfd, "dev", 0755, 1) < 0) return -1;
  if (guestfs_proc() && (overlay_dir(rootfd, "proc", 0555, 0) < 0 || overlay_dir(rootfd, "sys", 0555, 0) < 0)) return -1;
  int dev = openat(rootfd, "dev", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dev < 0) return -1;
  struct stat node = {0};
  node.st_mode = 0666;
  int rc = 0;
  if (mknodat(dev, "null", S_IFCHR | 0666, makedev(1, 3)) < 0 || meta(dev, "null", &node, 0) < 0) rc = -1;
  if (!rc && (mknodat(dev, "zero", S_IFCHR | 0666, makedev(1, 5)) < 0 || meta(dev, "zero", &node, 0) < 0)) rc = -1;
  if (!rc && guestfs_dev(dev) < 0) rc = -1;
  struct stat devst = {0};
  devst.st_mode = 0755;
  if (!rc) rc = meta(rootfd, "dev", &devst, 0); /* the two mknods moved /dev's mtime */
  close(dev);
  return rc;
}

int root_create(const char *template_dir, const char *dir) {
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) return STAGE_ROOT;
  /* a disk root is overlaid (disk.c), an initramfs template copied */
  if (disk_root() ? disk_overlay(template_dir, dir) < 0 : mount("cairn-root", dir, "tmpfs", MS_NOSUID, "mode=0700") < 0) return STAGE_ROOT;
  int sfd = open(template_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat rootst;
  int stage = 0;
  if (sfd < 0 || dfd < 0 || fstat(sfd, &rootst) < 0 || (!disk_root() && copy_dir(sfd, dfd) < 0)) stage = STAGE_ROOT;
  if (!stage && overlay(dfd) < 0) stage = STAGE_OVERLAY;
  /* the root's own metadata last: creating /tmp or /dev moved its mtime */
  if (!stage && meta(dfd, ".", &rootst, 0) < 0) stage = STAGE_ROOT;
  if (!stage && guestfs_mount(dir) < 0) stage = STAGE_OVERLAY; /* after the metadata: mounting changes none of it */
  int saved = errno;
  if (sfd >= 0) close(sfd);
  if (dfd >= 0) close(dfd);
  errno = saved;
  return stage;
}

void root_destroy(const char *dir) {
  umount2(dir, MNT_DETACH);
  if (disk_root()) disk_overlay_destroy(dir);
  rmdir(dir);
}
