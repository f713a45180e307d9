/* The loopback example workload: in one invocation, a server and a client
 * talk over 127.0.0.1 and over ::1 (the guest agent brings `lo` up before
 * every start), then the client shows that a port nobody listens on is
 * refused. Run twice in one boot (loopback.yaml), the second invocation
 * binds the same ports again: every process of the first one, its server
 * included, was killed before the second start, so nothing listens on from
 * one invocation to the next. Built with
 * `gcc -static -no-pie -O2 -o loopback loopback.c`. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what) {
  printf("%s: %s\n", what, strerror(errno));
  exit(1);
}

/* Fills addr with the loopback address of `family` and `port`. */
static socklen_t loopback(int family, int port, struct sockaddr_storage *addr) {
  memset(addr, 0, sizeof *addr);
  if (family == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)addr;
    a->sin_family = AF_INET;
    a->sin_port = htons((unsigned short)port);
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return sizeof *a;
  }
  struct sockaddr_in6 *a = (struct sockaddr_in6 *)addr;
  a->sin6_family = AF_INET6;
  a->sin6_port = htons((unsigned short)port);
  a->sin6_addr = in6addr_loopback;
  return sizeof *a;
}

/* Serves one connection on family/port in a child: reads a line, answers "pong <line>". */
static pid_t serve_once(int family, int port) {
  struct sockaddr_storage addr;
  socklen_t len = loopback(family, port, &addr);
  int s = socket(family, SOCK_STREAM, 0);
  int one = 1;
  if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) die("socket");
  if (bind(s, (struct sockaddr *)&addr, len) < 0) die("bind");
  if (listen(s, 1) < 0) die("listen");
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    int c = accept(s, NULL, NULL);
    if (c < 0) _exit(2);
    char buf[128], reply[160];
    ssize_t n = read(c, buf, sizeof buf - 1);
    if (n <= 0) _exit(3);
    buf[n] = 0;
    int m = snprintf(reply, sizeof reply, "pong %s", buf);
    if (write(c, reply, (size_t)m) != m) _exit(4);
    close(c);
    _exit(0);
  }
  close(s); /* the child holds the listening socket */
  return pid;
}

/* Connects to family/port; 0 and the answer in out, or the errno. */
static int ask(int family, int port, const char *msg, char *out, size_t cap) {
  struct sockaddr_storage addr;
  socklen_t len = loopback(family, port, &addr);
  int c = socket(family, SOCK_STREAM, 0);
  if (c < 0) die("socket");
  if (connect(c, (struct sockaddr *)&addr, len) < 0) {
    int e = errno;
    close(c);
    return e;
  }
  if (write(c, msg, strlen(msg)) != (ssize_t)strlen(msg)) die("write");
  size_t got = 0;
  ssize_t n;
  while (got < cap - 1 && (n = read(c, out + got, cap - 1 - got)) > 0) got += (size_t)n;
  out[got] = 0;
  close(c);
  return 0;
}

int main(int argc, char **argv) {
  int port = argc > 1 ? atoi(argv[1]) : 8080;
  const int families[] = {AF_INET, AF_INET6};
  const char *names[] = {"127.0.0.1", "::1"};
  for (int i = 0; i < 2; i++) {
    pid_t server = serve_once(families[i], port);
    char answer[160];
    int e = ask(families[i], port, "ping", answer, sizeof answer);
    if (e) {
      printf("%s port %d: %s\n", names[i], port, strerror(e));
      return 1;
    }
    int st;
    waitpid(server, &st, 0);
    printf("%s port %d: %s (server exit %d)\n", names[i], port, answer, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  }
  char answer[160];
  int e = ask(AF_INET, port + 1, "ping", answer, sizeof answer);
  printf("127.0.0.1 port %d: %s\n", port + 1, e ? strerror(e) : answer);
  return e == ECONNREFUSED ? 0 : 1;
}
