#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>
static int a2b[2], b2a[2];
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec*1e-3;}
static void* echo(void* p){(void)p;char c;while(read(a2b[0],&c,1)==1){ if(write(b2a[1],&c,1)!=1) break;} return 0;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(void){
  pipe(a2b); pipe(b2a); pthread_t t; pthread_create(&t,0,echo,0);
  enum{N=20000}; static double lat[N]; char c='x';
  for(int i=0;i<N;i++){ double t0=now(); write(a2b[1],&c,1); read(b2a[0],&c,1); lat[i]=now()-t0; usleep(200); }
  qsort(lat,N,sizeof(double),cmp);
  printf("round trip us: p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f\n",lat[N/2],lat[N*9/10],lat[N*99/100],lat[N*999/1000]);
  return 0;
}
