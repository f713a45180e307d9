/* The guest proves what it runs: before the first start, the template the
   kernel actually unpacked (/cairn/template) is checked against the tree
   manifest /cairn/tree (cairn.tree-manifest/1, src/vm/tree-manifest.ts),
   which the host derives from the canonical tree, never from the image.
   Every manifest entry must be there with its type, permission bits, owner,
   size and symlink target, and the template must hold nothing else; with
   the content flag (`run.verify-tree: content`) every file's SHA-256 too. The
   kernel's initramfs unpacker stops silently (to the workload) when guest
   RAM runs out; without this check the truncated tree ran and passed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agent.h"

#define TREE_MAGIC "CAIRNTM1"

static uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* Counts every entry below the directory fd (not the directory itself); -1 on error. */
static int64_t count_below(int dfd) {
  int dup_fd = dup(dfd);
  DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
  if (!d) {
    if (dup_fd >= 0) close(dup_fd);
    return -1;
  }
  int64_t n = 0;
  struct dirent *e;
  while (n >= 0 && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    n++;
    struct stat st;
    if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      n = -1;
    } else if (S_ISDIR(st.st_mode)) {
      int cfd = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      int64_t k = cfd < 0 ? -1 : count_below(cfd);
      if (cfd >= 0) close(cfd);
      n = k < 0 ? -1 : n + k;
    }
  }
  closedir(d);
  return n;
}

/* 0 when the file's bytes hash to `want`. */
static int check_content(int tfd, const char *path, const uint8_t want[32]) {
  int fd = openat(tfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  static uint8_t buf[65536];
  sha256_ctx c;
  sha256_init(&c);
  int rc = 0;
  for (;;) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) rc = -1;
    if (r <= 0) break;
    sha256_update(&c, buf, (size_t)r);
  }
  close(fd);
  uint8_t got[32];
  sha256_final(&c, got);
  return rc == 0 && memcmp(got, want, 32) == 0 ? 0 : -1;
}

/* Compares one entry; 0 when it is exactly as the manifest says. */
static int check_entry(int tfd, uint8_t type, uint32_t mode, uint32_t uid, uint32_t gid, uint64_t size, const char *path, const uint8_t *target,
                       uint32_t tlen) {
  struct stat st;
  int r = path[0] ? fstatat(tfd, path, &st, AT_SYMLINK_NOFOLLOW) : fstat(tfd, &st);
  if (r < 0) return -1;
  if (st.st_uid != uid || st.st_gid != gid || (uint32_t)(st.st_mode & 07777) != mode) return -1;
  if (type == 1) return S_ISDIR(st.st_mode) ? 0 : -1;
  if (type == 2) return S_ISREG(st.st_mode) && (uint64_t)st.st_size == size ? 0 : -1;
  if (type != 3 || !S_ISLNK(st.st_mode) || (uint64_t)st.st_size != size || tlen != size || tlen > 4095) return -1;
  char buf[4096];
  ssize_t n = readlinkat(tfd, path, buf, sizeof buf);
  return n == (ssize_t)tlen && memcmp(buf, target, tlen) == 0 ? 0 : -1;
}

int tree_verify(const char *manifest, const char *template_dir, uint64_t *detail) {
  *detail = 0;
  int fd = open(manifest, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  struct stat mst;
  if (fd < 0 || fstat(fd, &mst) < 0 || !S_ISREG(mst.st_mode) || mst.st_size < 20 || (uint64_t)mst.st_size > TREE_MANIFEST_MAX) {
    if (fd >= 0) close(fd);
    return TREE_MALFORMED;
  }
  size_t len = (size_t)mst.st_size;
  uint8_t *buf = malloc(len);
  size_t got = 0;
  while (buf && got < len) {
    ssize_t r = read(fd, buf + got, len - got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (!buf || got != len || memcmp(buf, TREE_MAGIC, 8) || le(buf + 8, 4) != TREE_MANIFEST_VERSION) {
    free(buf);
    return TREE_MALFORMED;
  }
  uint64_t flags = le(buf + 12, 4);
  uint64_t count = le(buf + 16, 4);
  if (flags & ~(uint64_t)TREE_FLAG_CONTENT) {
    free(buf);
    return TREE_MALFORMED;
  }
  int tfd = open(template_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (tfd < 0 || count == 0) {
    free(buf);
    if (tfd >= 0) close(tfd);
    return TREE_DIFFERS; /* no template at all: entry 0 (the root) is missing */
  }
  size_t off = 20;
  int rc = TREE_OK;
  char path[4097];
  for (uint64_t i = 0; i < count && rc == TREE_OK; i++) {
    /* u8 type, u32 mode, u32 uid, u32 gid, u64 size, bytes path, bytes target, [32 bytes sha256 for a file] */
    if (len - off < 25 + 4) {
      rc = TREE_MALFORMED;
      break;
    }
    const uint8_t *e = buf + off;
    uint8_t type = e[0];
    uint32_t mode = (uint32_t)le(e + 1, 4), uid = (uint32_t)le(e + 5, 4), gid = (uint32_t)le(e + 9, 4);
    uint64_t size = le(e + 13, 8);
    uint64_t plen = le(e + 21, 4);
    off += 25;
    if (plen >= sizeof path || len - off < plen + 4) {
      rc = TREE_MALFORMED;
      break;
    }
    memcpy(path, buf + off, plen);
    path[plen] = 0;
    off += plen;
    uint64_t tlen = le(buf + off, 4);
    off += 4;
    if (memchr(path, 0, plen) || len - off < tlen) {
      rc = TREE_MALFORMED;
      break;
    }
    const uint8_t *target = buf + off;
    off += tlen;
    const uint8_t *digest = NULL;
    if (type == 2) {
      if (len - off < 32) {
        rc = TREE_MALFORMED;
        break;
      }
      digest = buf + off;
      off += 32;
    }
    if (check_entry(tfd, type, mode, uid, gid, size, path, target, (uint32_t)tlen) < 0 ||
        (digest && (flags & TREE_FLAG_CONTENT) && check_content(tfd, path, digest) < 0)) {
      *detail = i;
      rc = TREE_DIFFERS;
    }
  }
  if (rc == TREE_OK && off != len) rc = TREE_MALFORMED;
  if (rc == TREE_OK) {
    /* nothing beyond the manifest: the template holds exactly count - 1 entries below its root */
    int64_t below = count_below(tfd);
    if (below < 0 || (uint64_t)below != count - 1) {
      *detail = count;
      rc = TREE_DIFFERS;
    }
  }
  close(tfd);
  free(buf);
  return rc;
}
