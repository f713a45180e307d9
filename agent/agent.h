/*
 * cairn guest agent: PID 1 of the run VM. Shared declarations.
 *
 * The agent reads the run's recorded inputs (launch values, scenario steps,
 * limits) from /cairn/inputs inside the initramfs, starts the workload in a
 * fresh RAM root built from the immutable template /cairn/template, and
 * reports process and byte facts on the virtio-serial port (/dev/vport*) in the cairn protocol
 * (docs/protocol.md). It never interprets application meaning.
 */
#ifndef CAIRN_AGENT_H
#define CAIRN_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROTOCOL_VERSION 1u
#define INPUTS_VERSION 1u
#define FRAME_MAX 4096u           /* largest output frame payload the agent emits */
#define INPUTS_MAX (64u << 20)    /* largest inputs file */
#define STRINGS_MAX 4096u         /* argv/env entries */
#define STEPS_MAX 4096u
#define PATTERN_MAX 256u
#define CLEANUP_ROUNDS_MAX 64

/* ---- sha256.c ---- */
typedef struct {
  uint32_t h[8];
  uint64_t len;
  uint8_t buf[64];
  size_t fill;
} sha256_ctx;
void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t n);
void sha256_final(sha256_ctx *c, uint8_t out[32]);

/* ---- proto.c: records on the protocol port ---- */
enum record_type {
  REC_HELLO = 1,
  REC_START = 2,
  REC_FRAME = 3,
  REC_INPUT_ACCEPTED = 4,
  REC_STDIN_CLOSED = 5,
  REC_TERMINATE_REQUESTED = 6,
  REC_EXIT = 7,
  REC_LAUNCH_FAILURE = 8,
  REC_CLEANUP_COMPLETE = 9,
  REC_INFRA_FAILURE = 10,
  REC_FINAL = 11,
  REC_INPUT_REJECTED = 12,
  REC_HOLD = 13,
};

enum launch_stage {
  STAGE_BUSY = 1,
  STAGE_CREDENTIALS = 2,
  STAGE_ROOT = 3,
  STAGE_OVERLAY = 4,
  STAGE_PIPES = 5,
  STAGE_FORK = 6,
  STAGE_FDS = 7,
  STAGE_CHROOT = 8,
  STAGE_CHDIR = 9,
  STAGE_SETGROUPS = 10,
  STAGE_NO_NEW_PRIVS = 11,
  STAGE_SETGID = 12,
  STAGE_SETUID = 13,
  STAGE_EXEC = 14,
};

enum infra_reason {
  INFRA_OUTPUT_LIMIT = 1,
  INFRA_STDIN_QUEUE_LIMIT = 2,
  INFRA_BAD_INPUT_OFFSET = 3,
  INFRA_TRANSPORT = 4,
  INFRA_TIME_LIMIT = 5,
  INFRA_SCENARIO_STUCK = 6,
  INFRA_CLEANUP = 7,
  INFRA_INPUTS_MALFORMED = 8,
  INFRA_NO_INVOCATION = 9,
  INFRA_TREE_MISMATCH = 10,
  INFRA_NETWORK = 11,
  INFRA_CHANNEL = 12,
};

int proto_open(const char *tty);
/* Each returns 0, or -1 after a transport failure (then proto_failed() is true). */
int rec_simple(uint8_t type, uint32_t inv);
int rec_hello(void);
int rec_frame(uint32_t inv, uint8_t stream, uint64_t offset, const uint8_t *data, uint32_t n);
int rec_input(uint8_t type, uint32_t inv, uint64_t offset, uint32_t n);
int rec_exit(uint32_t inv, uint8_t kind, uint32_t code, const uint64_t totals[2], const uint8_t digests[2][32]);
int rec_launch_failure(uint32_t inv, uint8_t stage, uint32_t err);
int rec_cleanup(uint32_t inv, uint32_t killed);
int rec_infra(uint32_t inv, uint8_t reason, uint64_t detail);
int rec_final(uint8_t status, uint32_t invocations);
int rec_hold(uint32_t inv, uint32_t hold, uint32_t next_step, uint64_t stdin_offset);
int proto_failed(void);

/* ---- inputs.c: the recorded inputs ---- */
enum step_action { ACT_START = 1, ACT_WRITE = 2, ACT_CLOSE = 3, ACT_TERMINATE = 4, ACT_NET_DOWN = 5, ACT_NET_UP = 6 };
enum trigger_kind { TRIG_NONE = 0, TRIG_EVENT = 1, TRIG_OUTPUT = 2 };

struct step {
  uint8_t action;
  uint8_t trigger;
  uint8_t trigger_arg; /* record type for TRIG_EVENT, stream (1 stdout, 2 stderr) for TRIG_OUTPUT */
  uint32_t pattern_len;
  const uint8_t *pattern;
  uint64_t offset;     /* write-stdin: declared stdin offset */
  uint32_t data_len;
  const uint8_t *data;
};

/* A hold (run.checkpoints): where the agent stops running steps, says so
   (REC_HOLD) and waits for the host's word on the input channel. */
#define HOLDS_MAX 16u
enum hold_kind { HOLD_STEP = 1, HOLD_OUTPUT = 2 };
struct hold {
  uint8_t kind;
  uint8_t stream;      /* HOLD_OUTPUT: 1 stdout, 2 stderr */
  uint32_t step;       /* HOLD_STEP: the step it follows */
  uint32_t pattern_len;
  const uint8_t *pattern;
};

struct inputs {
  uint64_t output_limit;   /* bytes per invocation, both streams together */
  uint64_t time_limit_ms;  /* guest (virtual) time per invocation */
  uint64_t stdin_queue_limit;
  uint32_t frame_bytes;
  uint32_t uid, gid;
  char *path;              /* executable path inside the workload root */
  char *workdir;
  char **argv;             /* NULL-terminated */
  char **envp;             /* NULL-terminated */
  uint32_t nsteps;
  struct step *steps;
  uint32_t nholds;         /* 0: no input channel */
  struct hold *holds;
};

int inputs_load(const char *file, struct inputs *in);
/* Parses a step list (u32 count, then steps as in the inputs file) that fills
   exactly n bytes; 0, or -1 when malformed. */
int steps_parse(const uint8_t *p, size_t n, uint32_t *nsteps, struct step **steps);

/* ---- chan.c: the input channel (the second serial port, recorded by QEMU) ---- */
#define CHANNEL_MAX (16u << 20) /* largest message body */
enum chan_kind { CHAN_CONTINUE = 1, CHAN_TAIL = 2 };
/* infra-failure channel details */
enum chan_failure { CHAN_FAIL_OPEN = 1, CHAN_FAIL_READ = 2, CHAN_FAIL_MAGIC = 3, CHAN_FAIL_HOLD = 4, CHAN_FAIL_KIND = 5, CHAN_FAIL_SIZE = 6, CHAN_FAIL_STEPS = 7 };
int chan_open(void);
/* Waits for the host's answer to hold `hold`. CHAN_CONTINUE, or CHAN_TAIL with
   the new steps in *nsteps and *steps; -1 with *detail a chan_failure. */
int chan_wait(uint32_t hold, uint32_t *nsteps, struct step **steps, uint64_t *detail);

/* ---- verify.c: the guest proves what it runs ---- */
#define TREE_MANIFEST_VERSION 1u
#define TREE_MANIFEST_MAX (256u << 20) /* largest tree manifest file */
#define TREE_FLAG_CONTENT 1u           /* run.verify-tree: content */
enum tree_result { TREE_OK = 0, TREE_DIFFERS = 1, TREE_MALFORMED = 2 };
/* Checks the unpacked template against the tree manifest. TREE_DIFFERS sets *detail to the
   index of the first entry that differs, or to the entry count when the template holds more. */
int tree_verify(const char *manifest, const char *template_dir, uint64_t *detail);

/* ---- root.c: fresh writable root per start ---- */
/* Builds a fresh tmpfs root at `dir` from `template`; returns 0 or a launch stage with errno set. */
int root_create(const char *template_dir, const char *dir);
void root_destroy(const char *dir);

/* ---- disk.c: the disk-backed root (run.root: disk) ---- */
/* 1 when the image names a root disk (/cairn/disk). */
int disk_root(void);
/* Mounts the root disk read-only at template_dir (no-op without a disk); -1 leaves it empty. */
int disk_mount(const char *template_dir);
/* Mounts a fresh overlay at dir: template_dir below, a new tmpfs above. */
int disk_overlay(const char *template_dir, const char *dir);
void disk_overlay_destroy(const char *dir);

/* ---- guestfs.c: opt-in overlay parts (/cairn/overlay) ---- */
int guestfs_proc(void);
/* Creates /dev/random and /dev/urandom in devfd when asked for; 0 or -1. */
int guestfs_dev(int devfd);
/* Mounts /proc and a read-only /sys under root when asked for; 0 or -1. */
int guestfs_mount(const char *root);

/* ---- child.c: the workload process ---- */
struct launch_pipes {
  int in_w, out_r, err_r;
};
/* Forks and execs the workload; on success returns the pid (>0) and the pipes.
   On failure returns 0 and sets *stage and *err (the child, if any, is reaped). */
pid_t child_start(const struct inputs *in, const char *root, struct launch_pipes *p, int *stage, int *err);

/* ---- cleanup ---- */
/* Kills every process but PID 1, reaps them, returns how many were reaped (excluding `main_pid`),
   and stores main_pid's wait status in *main_status if it is reaped here. -1 if processes remain. */
int cleanup_all(pid_t main_pid, int *main_status, int *main_reaped);

/* ---- net.c: the guest's network ---- */
/* infra-failure network details: which step of bringing loopback (1-3) or eth0 (4-8) up failed */
enum net_failure {
  NET_FAIL_LO_UP = 1,
  NET_FAIL_IPV4 = 2,
  NET_FAIL_IPV6 = 3,
  NET_FAIL_CONFIG = 4,  /* /cairn/network malformed */
  NET_FAIL_NO_ETH = 5,  /* eth0 never appeared */
  NET_FAIL_ADDRESS = 6, /* address or netmask refused */
  NET_FAIL_LINK = 7,    /* eth0 up/down refused */
  NET_FAIL_ROUTE = 8,   /* default route refused */
};
/* Brings `lo` up and proves 127.0.0.1 and ::1 can be bound. 0, or -1 with *detail a net_failure. */
int net_loopback_up(uint64_t *detail);
/* run.network (/cairn/network present): configures eth0 statically and brings it up.
   0 (also when there is no /cairn/network), or -1 with *detail a net_failure. */
int net_eth_configure(uint64_t *detail);
/* network-down / network-up steps: eth0's link (and its default route). 0 or -1 with *detail. */
int net_eth_set(int up, uint64_t *detail);

/* ---- boot.c ---- */
/* Loads the kernel modules in /cairn/modules and opens the protocol port. */
int boot_transport(void);
/* Reports `status` through isa-debug-exit (QEMU exits with status*2+1), then powers off. */
void power_off(int status) __attribute__((noreturn));

void diag(const char *fmt, ...);

#endif
