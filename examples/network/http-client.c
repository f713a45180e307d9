/* A small HTTP client for examples/network/http.yaml: fetches /hello.txt
   from the run's responder (10.0.2.100:80), waits for a line on stdin (the
   scenario takes the network down first), then fetches again, retrying
   every 100 ms until the network is back, and finally talks to the echo
   responder (port 7). Build: gcc -static -no-pie -O2 -o http-client http-client.c */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  inet_pton(AF_INET, "10.0.2.100", &a.sin_addr);
  fcntl(fd, F_SETFL, O_NONBLOCK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  struct pollfd p = {fd, POLLOUT, 0};
  int err = 0;
  socklen_t len = sizeof err;
  if (poll(&p, 1, 10000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
    close(fd);
    errno = err ? err : ETIMEDOUT;
    return -1;
  }
  fcntl(fd, F_SETFL, 0);
  return fd;
}

/* One exchange: sends req, reads the whole answer into out. Bytes read, or -1. */
static int exchange(int port, const char *req, char *out, size_t cap) {
  int fd = dial(port);
  if (fd < 0) return -1;
  if (write(fd, req, strlen(req)) < 0) return close(fd), -1;
  if (port == 7) shutdown(fd, SHUT_WR);
  size_t got = 0;
  ssize_t r;
  while (got < cap - 1 && (r = read(fd, out + got, cap - 1 - got)) > 0) got += (size_t)r;
  out[got] = 0;
  close(fd);
  return (int)got;
}

static void fetch(int n) {
  char buf[4096];
  for (int attempt = 1; attempt <= 200; attempt++) {
    if (exchange(80, "GET /hello.txt HTTP/1.0\r\n\r\n", buf, sizeof buf) > 0) {
      char *body = strstr(buf, "\r\n\r\n");
      int status = 0;
      sscanf(buf, "HTTP/1.0 %d", &status);
      printf("fetch %d: %d %s", n, status, body ? body + 4 : "(no body)\n");
      fflush(stdout);
      return;
    }
    printf("fetch %d attempt %d: %s\n", n, attempt, strerror(errno));
    fflush(stdout);
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
  }
  printf("fetch %d: gave up\n", n);
}

int main(void) {
  fetch(1);
  char line[64];
  if (!fgets(line, sizeof line, stdin)) return 2; /* the scenario says when to go on */
  fetch(2);
  char buf[64];
  errno = 0;
  if (exchange(7, "ping\n", buf, sizeof buf) > 0) printf("echo: %s", buf);
  else printf("echo: failed (%s)\n", errno ? strerror(errno) : "no answer");
  return 0;
}
