// pingpong with optional in-process spinner threads (SCHED_IDLE per thread).
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <unistd.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
static int a2b[2], b2a[2];
static volatile uint64_t sink;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec*1e-3;}
static void* echo(void* p){(void)p;char c;while(read(a2b[0],&c,1)==1){ if(write(b2a[1],&c,1)!=1) break;} return 0;}
static void* spin(void* p){(void)p; struct sched_param sp={0}; sched_setscheduler(0,SCHED_IDLE,&sp); setpriority(PRIO_PROCESS,syscall(SYS_gettid),19); uint64_t x=1; for(;;){for(int i=0;i<1000000;i++)x=x*6364136223846793005ull+1; sink=x;} return 0;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  int spinners=argc>1?atoi(argv[1]):0;
  for(int i=0;i<spinners;i++){pthread_t t;pthread_create(&t,0,spin,0);}
  usleep(300000);
  pipe(a2b); pipe(b2a); pthread_t t; pthread_create(&t,0,echo,0);
  enum{N=20000}; static double lat[N]; char c='x';
  for(int i=0;i<N;i++){ double t0=now(); write(a2b[1],&c,1); read(b2a[0],&c,1); lat[i]=now()-t0; usleep(200); }
  qsort(lat,N,sizeof(double),cmp);
  printf("%d in-process spinner threads: round trip us: p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f\n",spinners,lat[N/2],lat[N*9/10],lat[N*99/100],lat[N*999/1000]);
  return 0;
}
