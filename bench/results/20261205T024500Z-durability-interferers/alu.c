#include <stdio.h>
#include <stdint.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
volatile uint64_t sink;
int main(void){
  for(int r=0;r<5;r++){
    uint64_t x=88172645463325252ull; double t0=now();
    for(long i=0;i<400000000L;i++) x=x*6364136223846793005ull+1;
    sink=x; printf("%.3f s\n", now()-t0);
  }
  return 0;
}
