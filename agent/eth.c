/* The guest's NIC (run.network, issue 14): eth0 configured statically.

   The host writes /cairn/network (inside the guest image, so covered by its
   digest) as one line "ADDRESS/PREFIX GATEWAY\n", e.g.
   "10.0.2.15/24 10.0.2.2\n". No DHCP client: the address, netmask and
   default route are set here with ioctls, at the same instruction in record
   and replay. IPv6 is switched off on eth0 before it goes up (the
   user-mode network runs with ipv6=off; router solicitations and duplicate
   address detection would only be packets nobody answers).

   The steps network-down / network-up clear and set IFF_UP. Taking eth0
   down makes the kernel drop every route through it (the connected one
   and the default route); bringing it up restores the connected route
   from the address, and the agent adds the default route again. The
   workload runs as a nonzero uid without CAP_NET_ADMIN and cannot do any
   of this itself. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "agent.h"

#define ETH_WAIT_MS 2000 /* guest ms for eth0 to appear after the module loads */

static int configured;
static struct in_addr gateway;

static void sin_set(struct sockaddr *sa, struct in_addr a) {
  struct sockaddr_in *s = (struct sockaddr_in *)sa;
  memset(s, 0, sizeof *s);
  s->sin_family = AF_INET;
  s->sin_addr = a;
}

static int default_route(int fd) {
  struct rtentry rt;
  memset(&rt, 0, sizeof rt);
  struct in_addr any = {0};
  sin_set(&rt.rt_dst, any);
  sin_set(&rt.rt_genmask, any);
  sin_set(&rt.rt_gateway, gateway);
  rt.rt_flags = RTF_UP | RTF_GATEWAY;
  rt.rt_dev = "eth0";
  if (ioctl(fd, SIOCADDRT, &rt) < 0 && errno != EEXIST) return -1;
  return 0;
}

static int set_flags(int fd, int up) {
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strcpy(ifr.ifr_name, "eth0");
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) return -1;
  if (up) ifr.ifr_flags |= IFF_UP;
  else ifr.ifr_flags &= ~IFF_UP;
  return ioctl(fd, SIOCSIFFLAGS, &ifr);
}

static void ipv6_off(void) {
  int fd = open("/cairn/proc/sys/net/ipv6/conf/eth0/disable_ipv6", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  if (write(fd, "1", 1) < 0) diag("cannot disable IPv6 on eth0 (errno %d)", errno);
  close(fd);
}

int net_eth_configure(uint64_t *detail) {
  int cfg = open("/cairn/network", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (cfg < 0) return 0; /* no run.network: the guest has loopback only */
  char buf[128] = {0};
  ssize_t n = read(cfg, buf, sizeof buf - 1);
  close(cfg);
  char addr[32], gw[32];
  unsigned prefix = 0;
  struct in_addr a;
  if (n <= 0 || sscanf(buf, "%31[0-9.]/%u %31[0-9.]", addr, &prefix, gw) != 3 || prefix < 1 || prefix > 30 || inet_pton(AF_INET, addr, &a) != 1 ||
      inet_pton(AF_INET, gw, &gateway) != 1) {
    *detail = NET_FAIL_CONFIG;
    return -1;
  }
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *detail = NET_FAIL_LINK;
    return -1;
  }
  struct ifreq ifr;
  int found = 0;
  for (int i = 0; i <= ETH_WAIT_MS && !found; i++) {
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "eth0");
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) found = 1;
    else {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
    }
  }
  if (!found) {
    diag("no eth0 (errno %d)", errno);
    close(fd);
    *detail = NET_FAIL_NO_ETH;
    return -1;
  }
  ipv6_off();
  memset(&ifr, 0, sizeof ifr);
  strcpy(ifr.ifr_name, "eth0");
  sin_set(&ifr.ifr_addr, a);
  int rc = ioctl(fd, SIOCSIFADDR, &ifr);
  struct in_addr mask = {htonl(~((1u << (32 - prefix)) - 1))};
  memset(&ifr, 0, sizeof ifr);
  strcpy(ifr.ifr_name, "eth0");
  sin_set(&ifr.ifr_netmask, mask);
  if (rc == 0) rc = ioctl(fd, SIOCSIFNETMASK, &ifr);
  if (rc < 0) {
    diag("cannot set eth0's address (errno %d)", errno);
    close(fd);
    *detail = NET_FAIL_ADDRESS;
    return -1;
  }
  configured = 1;
  rc = net_eth_set(1, detail);
  close(fd);
  return rc;
}

int net_eth_set(int up, uint64_t *detail) {
  if (!configured) {
    *detail = NET_FAIL_CONFIG;
    return -1;
  }
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || set_flags(fd, up) < 0) {
    diag("cannot set eth0 %s (errno %d)", up ? "up" : "down", errno);
    if (fd >= 0) close(fd);
    *detail = NET_FAIL_LINK;
    return -1;
  }
  int rc = up ? default_route(fd) : 0;
  close(fd);
  if (rc < 0) {
    diag("cannot add the default route (errno %d)", errno);
    *detail = NET_FAIL_ROUTE;
    return -1;
  }
  return 0;
}
