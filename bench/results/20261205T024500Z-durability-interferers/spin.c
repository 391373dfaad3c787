#include <stdint.h>
volatile uint64_t sink;
int main(void){uint64_t x=1;for(;;){for(int i=0;i<1000000;i++)x=x*6364136223846793005ull+1;sink=x;}}
