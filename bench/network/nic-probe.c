/* The guest side of bench/network/nic-probe.ts: PID 1 of a throwaway VM (not
 * the cairn agent). Loads the NIC modules in /m, configures eth0 statically
 * (10.0.2.15/24, gateway 10.0.2.2: QEMU user-mode networking), makes five
 * HTTP/1.0 requests to the responder at 10.0.2.100:80 and prints one RESULT
 * line per request, then the guest time they took, and leaves through
 * isa-debug-exit. Without eth0 it prints "RESULT no-nic". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static void sa(struct sockaddr *s, const char *ip) { struct sockaddr_in *a=(void*)s; memset(a,0,sizeof *a); a->sin_family=AF_INET; inet_pton(AF_INET, ip, &a->sin_addr); }
static void ifset(int fd, const char *name, unsigned long req, const char *ip) { struct ifreq r; memset(&r,0,sizeof r); strcpy(r.ifr_name,name); sa(&r.ifr_addr, ip); if (ioctl(fd, req, &r)<0) printf("ioctl %lx %s: %d\n", req, name, errno); }
static void up(int fd, const char *name) { struct ifreq r; memset(&r,0,sizeof r); strcpy(r.ifr_name,name); ioctl(fd,SIOCGIFFLAGS,&r); r.ifr_flags|=IFF_UP; if(ioctl(fd,SIOCSIFFLAGS,&r)<0) printf("up %s: %d\n", name, errno); }
int main(void) {
  mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
  int con = open("/dev/console", O_WRONLY); dup2(con,1); dup2(con,2); setvbuf(stdout,NULL,_IONBF,0);
  DIR *d = opendir("/m"); char *names[32]; int n=0; struct dirent *e;
  while ((e=readdir(d))) if (e->d_name[0] != '.') names[n++]=strdup(e->d_name);
  qsort(names,n,sizeof *names,cmp);
  for (int i=0;i<n;i++){ char p[300]; snprintf(p,sizeof p,"/m/%s",names[i]); int fd=open(p,O_RDONLY); if (syscall(SYS_finit_module,fd,"",0)<0) printf("mod %s: %d\n",names[i],errno); close(fd);}
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  up(fd,"lo");
  struct timespec ts={0,1000000};
  for (int i=0;i<2000 && if_nametoindex("eth0")==0;i++) nanosleep(&ts,NULL);
  if (if_nametoindex("eth0") == 0) {
    printf("RESULT no-nic\n");
    if (ioperm(0xf4,4,1)==0) outb(0,0xf4);
    reboot(RB_POWER_OFF);
  }
  ifset(fd,"eth0",SIOCSIFADDR,"10.0.2.15"); ifset(fd,"eth0",SIOCSIFNETMASK,"255.255.255.0"); up(fd,"eth0");
  struct rtentry rt; memset(&rt,0,sizeof rt); sa(&rt.rt_dst,"0.0.0.0"); sa(&rt.rt_genmask,"0.0.0.0"); sa(&rt.rt_gateway,"10.0.2.2"); rt.rt_flags=RTF_UP|RTF_GATEWAY; rt.rt_dev="eth0";
  if (ioctl(fd,SIOCADDRT,&rt)<0) printf("route: %d\n", errno);
  struct timespec t0; clock_gettime(CLOCK_MONOTONIC,&t0);
  for (int k=0;k<5;k++) {
    int c=socket(AF_INET,SOCK_STREAM,0); struct sockaddr_in a; sa((void*)&a,"10.0.2.100"); a.sin_port=htons(80);
    if (connect(c,(void*)&a,sizeof a)<0) { printf("RESULT %d connect: %d\n",k,errno); close(c); continue; }
    const char *req="GET /hello.txt HTTP/1.0\r\n\r\n"; write(c,req,strlen(req));
    char buf[4096]; size_t got=0; ssize_t r; while((r=read(c,buf+got,sizeof buf-1-got))>0) got+=r; buf[got]=0;
    unsigned h=0; for(size_t i=0;i<got;i++) h=h*31+(unsigned char)buf[i];
    printf("RESULT %d got %zu hash %08x\n",k,got,h); close(c);
  }
  struct timespec t1; clock_gettime(CLOCK_MONOTONIC,&t1);
  printf("RESULT guest-ms %ld\n", (t1.tv_sec-t0.tv_sec)*1000+(t1.tv_nsec-t0.tv_nsec)/1000000);
  if (ioperm(0xf4,4,1)==0) outb(0,0xf4);
  reboot(RB_POWER_OFF); return 0;
}
