/* Parses /cairn/inputs, the run's recorded inputs written by the host
   (src/vm/inputs.ts): magic "CAIRNIN1", then little-endian fields. The file
   travels inside the initramfs, so it is covered by the initramfs digest;
   the parser is still bounded and refuses anything malformed. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agent.h"

struct cur {
  const uint8_t *p;
  size_t left;
  int bad;
};

static uint64_t get(struct cur *c, int n) {
  if (c->bad || c->left < (size_t)n) {
    c->bad = 1;
    return 0;
  }
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= (uint64_t)c->p[i] << (8 * i);
  c->p += n;
  c->left -= (size_t)n;
  return v;
}

static const uint8_t *bytes(struct cur *c, uint32_t *len) {
  uint64_t n = get(c, 4);
  if (c->bad || n > c->left) {
    c->bad = 1;
    return NULL;
  }
  const uint8_t *p = c->p;
  c->p += n;
  c->left -= n;
  *len = (uint32_t)n;
  return p;
}

/* A NUL-free string copied out; NUL inside would silently shorten an argv entry. */
static char *str(struct cur *c) {
  uint32_t n = 0;
  const uint8_t *p = bytes(c, &n);
  if (!p || memchr(p, 0, n)) {
    c->bad = 1;
    return NULL;
  }
  char *s = malloc(n + 1);
  if (!s) {
    c->bad = 1;
    return NULL;
  }
  memcpy(s, p, n);
  s[n] = 0;
  return s;
}

static char **strs(struct cur *c) {
  uint64_t n = get(c, 4);
  if (c->bad || n > STRINGS_MAX) {
    c->bad = 1;
    return NULL;
  }
  char **v = calloc(n + 1, sizeof *v);
  if (!v) {
    c->bad = 1;
    return NULL;
  }
  for (uint64_t i = 0; i < n && !c->bad; i++) v[i] = str(c);
  return v;
}

/* u32 count, then each step: action, trigger, trigger argument, pattern, stdin offset, data. */
static void parse_steps(struct cur *c, uint32_t *nsteps, struct step **out) {
  uint64_t n = get(c, 4);
  if (n > STEPS_MAX) c->bad = 1;
  struct step *steps = c->bad ? NULL : calloc(n + 1, sizeof *steps);
  if (!steps) c->bad = 1;
  for (uint64_t i = 0; i < n && !c->bad; i++) {
    struct step *s = &steps[i];
    s->action = (uint8_t)get(c, 1);
    s->trigger = (uint8_t)get(c, 1);
    s->trigger_arg = (uint8_t)get(c, 1);
    s->pattern = bytes(c, &s->pattern_len);
    s->offset = get(c, 8);
    s->data = bytes(c, &s->data_len);
    if (s->action < ACT_START || s->action > ACT_NET_UP || s->trigger > TRIG_OUTPUT) c->bad = 1;
    if (s->pattern_len > PATTERN_MAX) c->bad = 1;
    if (s->trigger == TRIG_OUTPUT && (s->pattern_len == 0 || s->trigger_arg < 1 || s->trigger_arg > 2)) c->bad = 1;
  }
  *nsteps = (uint32_t)n;
  *out = steps;
}

int steps_parse(const uint8_t *p, size_t n, uint32_t *nsteps, struct step **steps) {
  struct cur c = {p, n, 0};
  parse_steps(&c, nsteps, steps);
  return c.bad || c.left != 0 ? -1 : 0;
}

int inputs_load(const char *file, struct inputs *in) {
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) < 0 || st.st_size < 8 || (uint64_t)st.st_size > INPUTS_MAX) {
    close(fd);
    return -1;
  }
  uint8_t *buf = malloc((size_t)st.st_size);
  size_t got = 0;
  while (buf && got < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (!buf || got != (size_t)st.st_size || memcmp(buf, "CAIRNIN1", 8) != 0) return -1;
  struct cur c = {buf + 8, got - 8, 0};
  if (get(&c, 4) != INPUTS_VERSION) return -1;
  in->output_limit = get(&c, 8);
  in->time_limit_ms = get(&c, 8);
  in->stdin_queue_limit = get(&c, 8);
  in->frame_bytes = (uint32_t)get(&c, 4);
  if (in->frame_bytes == 0 || in->frame_bytes > FRAME_MAX) c.bad = 1;
  in->uid = (uint32_t)get(&c, 4);
  in->gid = (uint32_t)get(&c, 4);
  in->path = str(&c);
  in->workdir = str(&c);
  in->argv = strs(&c);
  in->envp = strs(&c);
  parse_steps(&c, &in->nsteps, &in->steps);
  /* a run with checkpoints: the holds, after the steps (absent otherwise, so other runs keep their bytes) */
  in->nholds = 0;
  in->holds = NULL;
  if (!c.bad && c.left > 0) {
    uint64_t h = get(&c, 4);
    if (h == 0 || h > HOLDS_MAX) c.bad = 1;
    in->holds = calloc(h + 1, sizeof *in->holds);
    if (!in->holds) c.bad = 1;
    for (uint64_t i = 0; i < h && !c.bad; i++) {
      struct hold *x = &in->holds[i];
      x->kind = (uint8_t)get(&c, 1);
      x->stream = (uint8_t)get(&c, 1);
      x->step = (uint32_t)get(&c, 4);
      x->pattern = bytes(&c, &x->pattern_len);
      if (x->kind == HOLD_STEP && (x->step >= in->nsteps || x->pattern_len != 0 || x->stream != 0)) c.bad = 1;
      if (x->kind == HOLD_OUTPUT && (x->stream < 1 || x->stream > 2 || x->pattern_len == 0 || x->pattern_len > PATTERN_MAX || x->step != 0)) c.bad = 1;
      if (x->kind != HOLD_STEP && x->kind != HOLD_OUTPUT) c.bad = 1;
    }
    in->nholds = (uint32_t)h;
  }
  if (c.left != 0) c.bad = 1;
  if (c.bad || !in->argv || !in->argv[0] || !in->envp || !in->path || !in->workdir) return -1;
  return 0;
}
