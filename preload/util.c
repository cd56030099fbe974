/* Small helpers the agent's files share (declared in agent.h): growing an
 * array on the writer thread, mkdir -p, and starting one of the agent's
 * own threads. None is for a hot path: each may allocate or block. */
#include "preload/agent.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

extern char **environ;

/* The environment the agent's start adds to: the program's entries and
 * ours, in static storage. A setenv of the program's later copies it into
 * memory of its own, as glibc does with any environ it did not allocate. */
#define ENV_SLOTS 4096u
static char *env_slots[ENV_SLOTS];
static char env_text[8192];
static size_t env_used;

int rs_env_put(const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    size_t n = 0;
    while (environ && environ[n])
        n++;
    if (n + 2 > ENV_SLOTS || env_used + nl + vl + 2 > sizeof env_text)
        return setenv(name, value, 1);
    char *entry = env_text + env_used;
    memcpy(entry, name, nl);
    entry[nl] = '=';
    memcpy(entry + nl + 1, value, vl + 1);
    env_used += nl + vl + 2;
    if (environ != env_slots) {
        memcpy(env_slots, environ, n * sizeof *environ);
        env_slots[n] = NULL;
        environ = env_slots;
    }
    for (size_t i = 0; i < n; i++)
        if (strncmp(env_slots[i], name, nl) == 0 && env_slots[i][nl] == '=') {
            env_slots[i] = entry;
            return 0;
        }
    env_slots[n] = entry;
    env_slots[n + 1] = NULL;
    return 0;
}

int rs_grow(void **arr, uint32_t *cap, uint32_t n, size_t elem)
{
    if (n <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : 64;
    while (c < n)
        c *= 2;
    void *p = realloc(*arr, (size_t)c * elem);
    if (!p)
        return -1;
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(c - *cap) * elem);
    *arr = p;
    *cap = c;
    return 0;
}

int rs_mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        int r = mkdir(path, 0700);
        *p = '/';
        if (r != 0 && errno != EEXIST)
            return -1;
    }
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

int rs_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack)
{
    /* The agent's threads never run the program's signal handlers: they
     * start with every signal blocked. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, stack);
    int err = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return err ? -1 : 0;
}
