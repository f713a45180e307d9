/* The agent's one diagnostic line writer: every file of the agent reports
   through it, so it lives apart from main.c (which would otherwise be
   imported back by every file it calls). */
#include <stdarg.h>
#include <stdio.h>
#include "agent.h"

void diag(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("cairn-agent: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
