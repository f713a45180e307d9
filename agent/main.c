/* PID 1 of the run VM: the scenario step machine, the output pump and the
   final status (protocol FINAL record + isa-debug-exit, see boot.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "agent.h"

struct inv {
  uint32_t id;
  pid_t pid;
  int active;           /* started and not yet cleaned up */
  int exited, status;   /* main process reaped, wait status */
  int in_w, rd[2];      /* stdin write end; stdout, stderr read ends (-1 when closed) */
  uint64_t total[2];
  sha256_ctx digest[2];
  uint64_t stdin_offset;  /* declared bytes queued so far */
  uint8_t *pending;       /* stdin bytes not yet accepted by the pipe */
  size_t pending_len, pending_off;
  uint64_t pending_start; /* stdin offset of pending[0] */
  uint32_t pending_chunks; /* chunk boundaries: lengths of the queued write-stdin steps */
  uint32_t chunk_len[STEPS_MAX];
  uint32_t chunk_head;
  int close_after;        /* close-stdin requested once the queue drains */
  uint8_t seen[16];       /* which event records this invocation has emitted */
  uint64_t deadline_ms;
  uint32_t reaped;
  /* output trigger matching: bytes since the last executed step (bounded tail),
     and whether the waiting step's pattern was seen in any of them */
  uint8_t tail[2][PATTERN_MAX * 2];
  size_t tail_len[2];
  int matched[2];
  /* output holds (run.checkpoints): the stream's last bytes, for a pattern split across reads */
  uint8_t htail[2][PATTERN_MAX];
  size_t htail_len[2];
  char root[64];
};

static struct inputs in;
static struct inv cur;
static const struct step *waiting; /* the next step to run, whose trigger is pending */
static uint32_t invocations;
static int infra;     /* an infrastructure failure ended the run */
static int sigfd = -1;
static uint32_t step_i;  /* the next step to run */
/* holds (run.checkpoints): which fired, which output holds have matched, and
   the step hold waiting for its step to be done (no later step runs meanwhile) */
static uint32_t hold_fired, hold_hit;
static struct {
  int active;
  uint32_t hold, inv;
  uint8_t action;
  uint64_t end; /* write-stdin: the stdin offset its last byte ends at */
} watch;

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void mark(uint8_t type) {
  if (type < sizeof cur.seen) cur.seen[type] = 1;
}

static void fail_infra(uint8_t reason, uint64_t detail);

/* Emits one output chunk; enforces the per-invocation output limit.
   Returns -1 when the invocation must stop reading (limit or transport). */
static int on_output(int s, const uint8_t *buf, size_t n) {
  if (cur.total[0] + cur.total[1] + n > in.output_limit) {
    fail_infra(INFRA_OUTPUT_LIMIT, in.output_limit);
    return -1;
  }
  if (rec_frame(cur.id, (uint8_t)(s + 1), cur.total[s], buf, (uint32_t)n) < 0) return -1;
  sha256_update(&cur.digest[s], buf, n);
  cur.total[s] += n;
  /* the waiting step's pattern anywhere in this read, or across its start:
     how the bytes were split into reads must not decide whether it matches */
  const struct step *w = waiting;
  if (w && w->trigger == TRIG_OUTPUT && w->trigger_arg - 1 == s && !cur.matched[s]) {
    size_t p = w->pattern_len;
    if (memmem(buf, n, w->pattern, p)) {
      cur.matched[s] = 1;
    } else if (p > 1) {
      uint8_t seam[PATTERN_MAX * 2];
      size_t a = cur.tail_len[s] < p - 1 ? cur.tail_len[s] : p - 1;
      size_t b = n < p - 1 ? n : p - 1;
      memcpy(seam, cur.tail[s] + cur.tail_len[s] - a, a);
      memcpy(seam + a, buf, b);
      if (memmem(seam, a + b, w->pattern, p)) cur.matched[s] = 1;
    }
  }
  /* output holds: the pattern anywhere in this invocation's stream, across reads too */
  for (uint32_t k = 0; k < in.nholds; k++) {
    const struct hold *h = &in.holds[k];
    if (h->kind != HOLD_OUTPUT || h->stream - 1 != s || (hold_fired | hold_hit) & (1u << k)) continue;
    size_t p = h->pattern_len;
    uint8_t seam[PATTERN_MAX * 2];
    size_t a = cur.htail_len[s] < p - 1 ? cur.htail_len[s] : p - 1;
    size_t b = n < p - 1 ? n : p - 1;
    memcpy(seam, cur.htail[s] + cur.htail_len[s] - a, a);
    memcpy(seam + a, buf, b);
    if (memmem(buf, n, h->pattern, p) || (p > 1 && memmem(seam, a + b, h->pattern, p))) hold_hit |= 1u << k;
  }
  if (in.nholds) {
    size_t hk = sizeof cur.htail[s];
    if (n >= hk) {
      memcpy(cur.htail[s], buf + n - hk, hk);
      cur.htail_len[s] = hk;
    } else {
      if (cur.htail_len[s] + n > hk) {
        size_t drop = cur.htail_len[s] + n - hk;
        memmove(cur.htail[s], cur.htail[s] + drop, cur.htail_len[s] - drop);
        cur.htail_len[s] -= drop;
      }
      memcpy(cur.htail[s] + cur.htail_len[s], buf, n);
      cur.htail_len[s] += n;
    }
  }
  /* keep the bytes since the last step, bounded to twice the largest pattern */
  size_t keep = sizeof cur.tail[s];
  if (n >= keep) {
    memcpy(cur.tail[s], buf + n - keep, keep);
    cur.tail_len[s] = keep;
  } else {
    if (cur.tail_len[s] + n > keep) {
      size_t drop = cur.tail_len[s] + n - keep;
      memmove(cur.tail[s], cur.tail[s] + drop, cur.tail_len[s] - drop);
      cur.tail_len[s] -= drop;
    }
    memcpy(cur.tail[s] + cur.tail_len[s], buf, n);
    cur.tail_len[s] += n;
  }
  return 0;
}

static void close_stream(int s) {
  close(cur.rd[s]);
  cur.rd[s] = -1;
}

/* Reads stream s: one frame (block = 0) or until EOF (block = 1).
   Returns 0 once the stream is closed, 1 if more may come. */
static int drain(int s, int block) {
  static uint8_t buf[FRAME_MAX];
  if (cur.rd[s] < 0) return 0;
  if (block) fcntl(cur.rd[s], F_SETFL, 0);
  for (;;) {
    ssize_t r = read(cur.rd[s], buf, in.frame_bytes);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno == EAGAIN && !block) return 1;
    if (r < 0) {
      fail_infra(INFRA_TRANSPORT, (uint64_t)errno);
      close_stream(s);
      return 0;
    }
    if (r == 0 || on_output(s, buf, (size_t)r) < 0) {
      close_stream(s);
      return 0;
    }
    if (!block) return 1; /* one frame per poll round keeps both streams moving */
  }
}

static void close_stdin(void) {
  if (cur.in_w >= 0) close(cur.in_w);
  cur.in_w = -1;
  rec_simple(REC_STDIN_CLOSED, cur.id);
  mark(REC_STDIN_CLOSED);
}

/* Pushes pending stdin into the pipe; emits input-accepted per completed chunk. */
static void feed(void) {
  while (cur.pending_off < cur.pending_len && cur.in_w >= 0) {
    ssize_t w = write(cur.in_w, cur.pending + cur.pending_off, cur.pending_len - cur.pending_off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) return;
    if (w < 0) {
      /* the workload closed its stdin: the rest is rejected, not lost silently */
      rec_input(REC_INPUT_REJECTED, cur.id, cur.pending_start + cur.pending_off, (uint32_t)(cur.pending_len - cur.pending_off));
      mark(REC_INPUT_REJECTED);
      cur.pending_off = cur.pending_len;
      cur.chunk_head = cur.pending_chunks;
      close(cur.in_w);
      cur.in_w = -1;
      break;
    }
    cur.pending_off += (size_t)w;
    uint64_t done = cur.pending_off;
    uint64_t edge = 0;
    for (uint32_t i = 0; i < cur.pending_chunks; i++) {
      edge += cur.chunk_len[i];
      if (i >= cur.chunk_head && edge <= done) {
        rec_input(REC_INPUT_ACCEPTED, cur.id, cur.pending_start + edge - cur.chunk_len[i], cur.chunk_len[i]);
        mark(REC_INPUT_ACCEPTED);
        cur.chunk_head = i + 1;
      }
    }
  }
  if (cur.pending_off == cur.pending_len && cur.close_after && cur.in_w >= 0) close_stdin();
}

static void reap_nonblocking(void) {
  for (;;) {
    int st;
    pid_t r = waitpid(-1, &st, WNOHANG);
    if (r <= 0) return;
    if (r == cur.pid) {
      cur.exited = 1;
      cur.status = st;
    } else {
      cur.reaped++;
    }
  }
}

/* Exit or termination: kill everything but PID 1, reap, drain to EOF, report. */
static void finish_invocation(void) {
  int reaped_main = cur.exited;
  int st = cur.status;
  int killed = cleanup_all(cur.pid, &st, &reaped_main);
  if (killed < 0) {
    rec_infra(cur.id, INFRA_CLEANUP, 0);
    infra = 1;
    killed = 0;
  }
  /* every writer is dead now, so both pipes reach EOF */
  drain(0, 1);
  drain(1, 1);
  if (cur.in_w >= 0) close(cur.in_w);
  cur.in_w = -1;
  uint8_t dg[2][32];
  sha256_final(&cur.digest[0], dg[0]);
  sha256_final(&cur.digest[1], dg[1]);
  uint8_t kind = WIFSIGNALED(st) ? 2 : 1;
  uint32_t code = WIFSIGNALED(st) ? (uint32_t)WTERMSIG(st) : (uint32_t)WEXITSTATUS(st);
  rec_exit(cur.id, kind, code, cur.total, dg);
  mark(REC_EXIT);
  root_destroy(cur.root);
  rec_cleanup(cur.id, (uint32_t)killed + cur.reaped);
  mark(REC_CLEANUP_COMPLETE);
  cur.active = 0;
  free(cur.pending);
  cur.pending = NULL;
}

static void fail_infra(uint8_t reason, uint64_t detail) {
  if (infra) return;
  infra = 1;
  rec_infra(cur.id, reason, detail);
}

static void do_start(void) {
  uint32_t id = ++invocations;
  if (cur.active) {
    /* a new start before cleanup-complete of the previous one is refused */
    rec_launch_failure(id, STAGE_BUSY, EBUSY);
    return;
  }
  memset(&cur, 0, sizeof cur);
  cur.id = id;
  cur.in_w = cur.rd[0] = cur.rd[1] = -1;
  sha256_init(&cur.digest[0]);
  sha256_init(&cur.digest[1]);
  snprintf(cur.root, sizeof cur.root, "/cairn/run/%u", id);
  int stage = root_create("/cairn/template", cur.root);
  int err = errno;
  struct launch_pipes p;
  pid_t pid = 0;
  if (!stage) pid = child_start(&in, cur.root, &p, &stage, &err);
  if (!pid) {
    rec_launch_failure(id, (uint8_t)stage, (uint32_t)err);
    mark(REC_LAUNCH_FAILURE);
    root_destroy(cur.root);
    int st = 0, r = 0;
    int killed = cleanup_all(-1, &st, &r);
    rec_cleanup(id, killed < 0 ? 0 : (uint32_t)killed);
    mark(REC_CLEANUP_COMPLETE);
    return;
  }
  cur.pid = pid;
  cur.active = 1;
  cur.in_w = p.in_w;
  cur.rd[0] = p.out_r;
  cur.rd[1] = p.err_r;
  cur.deadline_ms = now_ms() + in.time_limit_ms;
  rec_simple(REC_START, id);
  mark(REC_START);
}

static int trigger_met(const struct step *s) {
  if (s->trigger == TRIG_NONE) return 1;
  if (s->trigger == TRIG_EVENT) {
    if (!cur.id || s->trigger_arg >= sizeof cur.seen || !cur.seen[s->trigger_arg]) return 0;
    if (s->trigger_arg == REC_INPUT_ACCEPTED) return cur.pending_off == cur.pending_len;
    return 1;
  }
  int st = s->trigger_arg - 1;
  if (cur.matched[st]) return 1;
  if (cur.tail_len[st] < s->pattern_len) return 0;
  return memmem(cur.tail[st], cur.tail_len[st], s->pattern, s->pattern_len) != NULL;
}

static void exec_step(const struct step *s) {
  if (s->action == ACT_START) {
    do_start();
  } else if (s->action == ACT_NET_DOWN || s->action == ACT_NET_UP) {
    /* the network belongs to the boot: no invocation needed */
    uint64_t detail = 0;
    if (net_eth_set(s->action == ACT_NET_UP, &detail) < 0) fail_infra(INFRA_NETWORK, detail);
  } else if (!cur.active) {
    fail_infra(INFRA_NO_INVOCATION, s->action);
  } else if (s->action == ACT_WRITE) {
    if (s->offset != cur.stdin_offset) {
      fail_infra(INFRA_BAD_INPUT_OFFSET, s->offset);
      return;
    }
    if (cur.close_after || cur.in_w < 0 || cur.pending_chunks >= STEPS_MAX) {
      fail_infra(INFRA_NO_INVOCATION, s->action);
      return;
    }
    if (cur.pending_len - cur.pending_off + s->data_len > in.stdin_queue_limit) {
      fail_infra(INFRA_STDIN_QUEUE_LIMIT, in.stdin_queue_limit);
      return;
    }
    uint8_t *grown = realloc(cur.pending, cur.pending_len + s->data_len + 1);
    if (!grown) {
      fail_infra(INFRA_STDIN_QUEUE_LIMIT, in.stdin_queue_limit);
      return;
    }
    cur.pending = grown;
    memcpy(cur.pending + cur.pending_len, s->data, s->data_len);
    cur.pending_len += s->data_len;
    cur.chunk_len[cur.pending_chunks++] = s->data_len;
    cur.stdin_offset += s->data_len;
    feed();
  } else if (s->action == ACT_CLOSE) {
    cur.close_after = 1;
    feed();
  } else if (s->action == ACT_TERMINATE) {
    kill(cur.pid, SIGKILL);
    rec_simple(REC_TERMINATE_REQUESTED, cur.id);
    mark(REC_TERMINATE_REQUESTED);
  }
  /* output triggers look only at bytes after the step that precedes them */
  cur.tail_len[0] = cur.tail_len[1] = 0;
  cur.matched[0] = cur.matched[1] = 0;
}

/* One round of waiting: output, stdin, child exit, deadline. */
static void pump(void) {
  struct pollfd fds[4];
  int n = 0;
  fds[n++] = (struct pollfd){sigfd, POLLIN, 0};
  int io[2] = {-1, -1};
  for (int s = 0; s < 2; s++)
    if (cur.rd[s] >= 0) {
      io[s] = n;
      fds[n++] = (struct pollfd){cur.rd[s], POLLIN, 0};
    }
  int inw = -1;
  if (cur.in_w >= 0 && cur.pending_off < cur.pending_len) {
    inw = n;
    fds[n++] = (struct pollfd){cur.in_w, POLLOUT, 0};
  }
  uint64_t t = now_ms();
  int timeout = t >= cur.deadline_ms ? 0 : (int)(cur.deadline_ms - t > 1000 ? 1000 : cur.deadline_ms - t);
  int r = poll(fds, (nfds_t)n, timeout);
  if (r < 0 && errno != EINTR) {
    fail_infra(INFRA_TRANSPORT, (uint64_t)errno);
    return;
  }
  if (r > 0 && (fds[0].revents & POLLIN)) {
    struct signalfd_siginfo si;
    while (read(sigfd, &si, sizeof si) == sizeof si) {}
  }
  reap_nonblocking();
  for (int s = 0; s < 2; s++)
    if (io[s] >= 0 && fds[io[s]].revents) drain(s, 0);
  if (inw >= 0 && fds[inw].revents) feed();
  if (!infra && now_ms() >= cur.deadline_ms) fail_infra(INFRA_TIME_LIMIT, in.time_limit_ms);
}

/* A step hold's step is done once the agent has written the record that says so
   (the rule the host's docs state: start, the input record covering a write's
   last byte, stdin-closed, requested-termination), or its invocation is over. */
static int watch_done(void) {
  if (watch.action == ACT_START || watch.action == ACT_TERMINATE) return 1;
  if (!cur.active || cur.id != watch.inv) return 1;
  if (watch.action == ACT_WRITE) return cur.pending_start + cur.pending_off >= watch.end || cur.seen[REC_INPUT_REJECTED];
  return cur.seen[REC_STDIN_CLOSED];
}

/* Stops at hold k: says so on the protocol port, then waits for the host's
   answer on the input channel (the guest's workload runs on meanwhile). A
   tail replaces the steps not yet run, and ends every other hold. */
static void do_hold(uint32_t k) {
  hold_fired |= 1u << k;
  if (watch.active && watch.hold == k) watch.active = 0;
  if (rec_hold(cur.id, k, step_i, cur.stdin_offset) < 0) return;
  uint32_t n = 0;
  struct step *steps = NULL;
  uint64_t detail = 0;
  int r = chan_wait(k, &n, &steps, &detail);
  if (r < 0) {
    fail_infra(INFRA_CHANNEL, detail);
    return;
  }
  if (r == CHAN_TAIL) {
    in.steps = steps;
    in.nsteps = n;
    step_i = 0;
    hold_fired = (1u << in.nholds) - 1;
    watch.active = 0;
    /* the tail's first output trigger sees what the parent's next step would have: the bytes since
       the last step run (kept in cur.tail); whether the parent's own pattern matched does not carry over */
    cur.matched[0] = cur.matched[1] = 0;
  }
}

/* Fires the first hold whose moment has come; 1 if one did. */
static int hold_check(void) {
  if (watch.active && watch_done()) {
    do_hold(watch.hold);
    return 1;
  }
  for (uint32_t k = 0; k < in.nholds; k++)
    if ((hold_hit & (1u << k)) && !(hold_fired & (1u << k))) {
      do_hold(k);
      return 1;
    }
  return 0;
}

static void run_step(uint32_t idx) {
  const struct step *s = &in.steps[idx];
  exec_step(s);
  for (uint32_t k = 0; k < in.nholds; k++) {
    const struct hold *h = &in.holds[k];
    if (h->kind == HOLD_STEP && h->step == idx && !(hold_fired & (1u << k))) {
      watch.active = 1;
      watch.hold = k;
      watch.inv = cur.id;
      watch.action = s->action;
      watch.end = s->offset + s->data_len;
    }
  }
}

static void run_steps(void) {
  while (!infra && !proto_failed()) {
    while (!infra && !proto_failed()) {
      if (hold_check()) continue;
      if (watch.active) break; /* no later step until the step it follows is done */
      if (step_i < in.nsteps && trigger_met(&in.steps[step_i])) {
        run_step(step_i++);
        continue;
      }
      break;
    }
    if (infra || proto_failed()) break;
    waiting = step_i < in.nsteps ? &in.steps[step_i] : NULL; /* matched during a step hold's wait too, as without one */
    if (cur.active && (cur.exited || cur.seen[REC_TERMINATE_REQUESTED])) {
      finish_invocation();
      continue; /* exit and cleanup-complete may satisfy the next trigger */
    }
    if (!cur.active) {
      if (step_i < in.nsteps) fail_infra(INFRA_SCENARIO_STUCK, step_i);
      break;
    }
    pump();
  }
  if (cur.active) finish_invocation();
}

int main(void) {
  umask(0);
  signal(SIGPIPE, SIG_IGN);
  if (getpid() != 1) {
    diag("must run as PID 1 of the run VM");
    return 2;
  }
  mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID | MS_NOEXEC, NULL);
  mkdir("/cairn/proc", 0700);
  /* private /proc outside the workload root, only for process enumeration */
  mount("proc", "/cairn/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=0");
  mkdir("/cairn/run", 0700);
  if (boot_transport() < 0) power_off(2);
  rec_hello();
  disk_mount("/cairn/template"); /* a failure leaves the template empty: tree-mismatch below */
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
  uint64_t bad = 0;
  int tree = TREE_OK;
  if (inputs_load("/cairn/inputs", &in) < 0) {
    rec_infra(0, INFRA_INPUTS_MALFORMED, 0);
    infra = 1;
  } else if ((tree = tree_verify("/cairn/tree", "/cairn/template", &bad)) != TREE_OK) {
    /* the guest does not see the tree the identity names: nothing may run on it */
    rec_infra(0, tree == TREE_MALFORMED ? INFRA_INPUTS_MALFORMED : INFRA_TREE_MISMATCH, tree == TREE_MALFORMED ? 1 : bad);
    infra = 1;
  } else if (in.nholds > 0 && chan_open() < 0) {
    /* a run with checkpoints waits for the host at each: without the channel it could not */
    rec_infra(0, INFRA_CHANNEL, CHAN_FAIL_OPEN);
    infra = 1;
  } else if (net_loopback_up(&bad) < 0 || net_eth_configure(&bad) < 0) {
    /* loopback (and eth0 with run.network) is part of what every start gets; without it nothing may run */
    rec_infra(0, INFRA_NETWORK, bad);
    infra = 1;
  } else {
    run_steps();
  }
  if (proto_failed()) power_off(2);
  rec_final(infra ? 1 : 0, invocations);
  power_off(infra ? 1 : 0);
  return 0;
}
