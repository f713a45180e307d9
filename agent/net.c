/* The guest's network: loopback, always.

   Before any start the agent brings `lo` up with SIOCSIFFLAGS. The kernel
   itself then assigns 127.0.0.1/8 (devinet.c, NETDEV_UP on a loopback
   device) and ::1/128 (addrconf.c, init_loopback); the agent does not add
   them, it proves they are usable: it binds a TCP socket to 127.0.0.1 and
   one to ::1. IPv6 addresses pass through a tentative state in a kernel
   work item even on loopback (no duplicate detection is sent there), so
   the ::1 bind is retried every guest millisecond, up to a bound. The wait
   runs in guest (virtual) time, so it ends at the same instruction in
   record and replay.

   Done once per boot: the workload runs as a nonzero uid without
   CAP_NET_ADMIN, so nothing it does can change `lo` for the next start. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "agent.h"

#define LOOPBACK_WAIT_MS 2000 /* guest ms for ::1 to leave its tentative state */

/* Binds a fresh TCP socket to addr, port 0 (any free port). 0 or errno. */
static int try_bind(const struct sockaddr *addr, socklen_t len) {
  int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno ? errno : EIO;
  int rc = bind(fd, addr, len) < 0 ? (errno ? errno : EIO) : 0;
  close(fd);
  return rc;
}

int net_loopback_up(uint64_t *detail) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *detail = NET_FAIL_LO_UP;
    return -1;
  }
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strcpy(ifr.ifr_name, "lo");
  int rc = ioctl(fd, SIOCGIFFLAGS, &ifr);
  if (rc == 0) {
    ifr.ifr_flags |= IFF_UP;
    rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
  }
  close(fd);
  if (rc < 0) {
    diag("cannot bring lo up (errno %d)", errno);
    *detail = NET_FAIL_LO_UP;
    return -1;
  }
  struct sockaddr_in v4;
  memset(&v4, 0, sizeof v4);
  v4.sin_family = AF_INET;
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if ((rc = try_bind((struct sockaddr *)&v4, sizeof v4)) != 0) {
    diag("127.0.0.1 is not usable after lo up (errno %d)", rc);
    *detail = NET_FAIL_IPV4;
    return -1;
  }
  struct sockaddr_in6 v6;
  memset(&v6, 0, sizeof v6);
  v6.sin6_family = AF_INET6;
  v6.sin6_addr = in6addr_loopback;
  for (int i = 0;; i++) {
    rc = try_bind((struct sockaddr *)&v6, sizeof v6);
    if (rc == 0) return 0;
    if (rc != EADDRNOTAVAIL || i >= LOOPBACK_WAIT_MS) break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  diag("::1 is not usable after lo up (errno %d)", rc);
  *detail = NET_FAIL_IPV6;
  return -1;
}
