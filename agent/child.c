/* Starting the workload and cleaning up after it.
   The agent never changes its own root: a forked child gets fresh pipes,
   closes every other descriptor, chroots and chdirs, clears supplementary
   groups, sets no_new_privs, applies the nonzero gid then uid, and execs the
   exact argv and env without a shell or PATH search. Each setup step that
   fails writes (stage, errno) to a close-on-exec pipe and exits before any
   workload code runs; the parent turns that into a typed launch failure. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agent.h"

static void fail(int errfd, int stage) {
  uint8_t b[5] = {(uint8_t)stage};
  uint32_t e = (uint32_t)errno;
  memcpy(b + 1, &e, 4);
  (void)!write(errfd, b, sizeof b);
  _exit(127);
}

static void close_others(int keep) {
  /* close_range is in Linux >= 5.9; the guest kernel is pinned by digest */
  if (keep > 3 && syscall(436 /* close_range */, 3u, (unsigned)keep - 1, 0u) < 0) _exit(126);
  if (syscall(436, (unsigned)keep + 1, ~0u, 0u) < 0) _exit(126);
}

static void in_child(const struct inputs *in, const char *root, int pin[2], int pout[2], int perr[2], int errfd) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  if (dup2(pin[0], 0) < 0 || dup2(pout[1], 1) < 0 || dup2(perr[1], 2) < 0) fail(errfd, STAGE_FDS);
  if (errfd < 3) fail(errfd, STAGE_FDS);
  close_others(errfd);
  if (chroot(root) < 0) fail(errfd, STAGE_CHROOT);
  if (chdir("/") < 0 || chdir(in->workdir) < 0) fail(errfd, STAGE_CHDIR);
  if (setgroups(0, NULL) < 0) fail(errfd, STAGE_SETGROUPS);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) fail(errfd, STAGE_NO_NEW_PRIVS);
  if (setresgid(in->gid, in->gid, in->gid) < 0) fail(errfd, STAGE_SETGID);
  if (setresuid(in->uid, in->uid, in->uid) < 0) fail(errfd, STAGE_SETUID);
  umask(022);
  execve(in->path, in->argv, in->envp);
  fail(errfd, STAGE_EXEC);
}

pid_t child_start(const struct inputs *in, const char *root, struct launch_pipes *p, int *stage, int *err) {
  int pin[2], pout[2], perr[2], pe[2];
  *err = 0;
  if (in->uid == 0 || in->gid == 0) {
    /* the workload never runs with root credentials, even inside its own root */
    *stage = STAGE_CREDENTIALS;
    *err = EPERM;
    return 0;
  }
  if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
    *stage = STAGE_PIPES;
    *err = errno;
    return 0;
  }
  pid_t pid = fork();
  if (pid < 0) {
    *stage = STAGE_FORK;
    *err = errno;
    return 0;
  }
  if (pid == 0) {
    close(pe[0]);
    in_child(in, root, pin, pout, perr, pe[1]);
  }
  close(pin[0]);
  close(pout[1]);
  close(perr[1]);
  close(pe[1]);
  uint8_t b[5];
  ssize_t n;
  do n = read(pe[0], b, sizeof b);
  while (n < 0 && errno == EINTR);
  close(pe[0]);
  if (n != 0) {
    *stage = n == 5 ? b[0] : STAGE_EXEC;
    uint32_t e = 0;
    if (n == 5) memcpy(&e, b + 1, 4);
    *err = (int)e;
    int st;
    waitpid(pid, &st, 0);
    close(pin[1]);
    close(pout[0]);
    close(perr[0]);
    return 0;
  }
  p->in_w = pin[1];
  p->out_r = pout[0];
  p->err_r = perr[0];
  fcntl(p->in_w, F_SETFL, O_NONBLOCK);
  fcntl(p->out_r, F_SETFL, O_NONBLOCK);
  fcntl(p->err_r, F_SETFL, O_NONBLOCK);
  return pid;
}

/* Counts user processes other than PID 1 in the agent's private /proc.
   Kernel threads (kthreadd, pid 2, and its children) are not processes the
   workload can create and cannot be signalled. */
static int remaining(void) {
  DIR *d = opendir("/cairn/proc");
  if (!d) return -1;
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 2) continue;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/cairn/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue; /* already gone */
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    long ppid = 0;
    char state = 0;
    if (rp && sscanf(rp + 2, "%c %ld", &state, &ppid) == 2 && ppid == 2) continue; /* kernel thread */
    count++;
  }
  closedir(d);
  return count;
}

int cleanup_all(pid_t main_pid, int *main_status, int *main_reaped) {
  int killed = 0;
  for (int round = 0; round < CLEANUP_ROUNDS_MAX; round++) {
    /* kill(-1) reaches every process except PID 1 itself: double-forked,
       reparented and process-group-escaped descendants included */
    kill(-1, SIGKILL);
    for (;;) {
      int st;
      pid_t r = waitpid(-1, &st, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) break; /* ECHILD: PID 1 has no children left */
      if (r == main_pid) {
        *main_status = st;
        *main_reaped = 1;
      } else {
        killed++;
      }
    }
    if (remaining() == 0) return killed;
  }
  return -1;
}
