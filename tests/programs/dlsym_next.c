/* dlsym(RTLD_NEXT) looks for the next definition after the caller's object.
 * The agent interposes dlsym: this program checks that the answer is still
 * relative to the program, not to the agent. From the main program, the next
 * "write" is the first one in the search order (the agent's, when preloaded),
 * the same that RTLD_DEFAULT gives. Prints "same" or "different". */
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
    void *next = dlsym(RTLD_NEXT, "write");
    void *deflt = dlsym(RTLD_DEFAULT, "write");
    printf("%s\n", next && next == deflt ? "same" : "different");
    return 0;
}
