/* simlaunch -n N [--nodes K] [--] CMD [ARGS...]: starts N ranks of CMD the way
 * torchrun does on one node (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
 * GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID, the same for all ranks),
 * forwards SIGINT and SIGTERM to them, waits for all, and exits with the worst
 * status: the highest exit code, a rank killed by signal n counting as 128 + n.
 * --nodes K plays K nodes of N / K ranks each, as torchrun on each of them would:
 * LOCAL_RANK and LOCAL_WORLD_SIZE within the node, GROUP_RANK the node, and each
 * rank in a UTS namespace of its own whose host name is the node's
 * ("<host>-node<k>"), so that what reads the host name sees K hosts (root, or
 * CAP_SYS_ADMIN, needed). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SIM_LAUNCH_MAX 256

static pid_t sim_launch_pids[SIM_LAUNCH_MAX];
static int sim_launch_n;

static void sim_launch_forward(int sig)
{
    for (int i = 0; i < sim_launch_n; i++)
        if (sim_launch_pids[i] > 0)
            kill(sim_launch_pids[i], sig);
}

static void sim_launch_usage(const char *why)
{
    fprintf(stderr, "simlaunch: %s\nusage: simlaunch -n N [--nodes K] [--] CMD [ARGS...]\n", why);
    exit(2);
}

/* In a rank's child: a host name of its own, node k's. */
static void sim_launch_node(long k)
{
    char host[256] = "sim", name[300];
    gethostname(host, sizeof(host) - 1);
    snprintf(name, sizeof(name), "%.200s-node%ld", host, k);
    if (unshare(CLONE_NEWUTS) != 0 || sethostname(name, strlen(name)) != 0) {
        fprintf(stderr, "simlaunch: --nodes: cannot give a rank the host name %s: %s (it needs root or "
                        "CAP_SYS_ADMIN)\n", name, strerror(errno));
        _exit(126);
    }
}

static void sim_launch_setenv(const char *name, long value)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%ld", value);
    setenv(name, buf, 1);
}

int main(int argc, char **argv)
{
    int i = 1, worst = 0;
    long n = 0, nodes = 0;
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: simlaunch -n N [--nodes K] [--] CMD [ARGS...]\n"
               "Starts N ranks of CMD as torchrun does on one node; MASTER_PORT and\n"
               "TORCHELASTIC_RUN_ID are kept when set, made up otherwise.\n"
               "  --nodes K  as K nodes of N / K ranks: LOCAL_RANK, LOCAL_WORLD_SIZE and\n"
               "             GROUP_RANK per node, and each rank the host name <host>-node<k>\n"
               "             in a UTS namespace of its own (needs root)\n");
        return 0;
    }
    if (i + 1 < argc && !strcmp(argv[i], "-n")) {
        char *end;
        n = strtol(argv[i + 1], &end, 10);
        if (*end || n < 1 || n > SIM_LAUNCH_MAX)
            sim_launch_usage("-n wants a number of ranks from 1 to 256");
        i += 2;
    } else {
        sim_launch_usage("missing -n N");
    }
    if (i + 1 < argc && !strcmp(argv[i], "--nodes")) {
        char *end;
        nodes = strtol(argv[i + 1], &end, 10);
        if (*end || nodes < 1 || n % nodes)
            sim_launch_usage("--nodes wants a number of nodes that divides the ranks");
        i += 2;
    }
    if (i < argc && !strcmp(argv[i], "--"))
        i++;
    if (i >= argc)
        sim_launch_usage("missing the command to run");

    /* One run id and port per launch, as torchrun's rendezvous gives. */
    if (!getenv("MASTER_PORT"))
        sim_launch_setenv("MASTER_PORT", 20000 + (long)getpid() % 40000);
    if (!getenv("TORCHELASTIC_RUN_ID")) {
        char id[64];
        snprintf(id, sizeof(id), "simlaunch-%ld-%ld", (long)getpid(), (long)time(NULL));
        setenv("TORCHELASTIC_RUN_ID", id, 1);
    }
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    sim_launch_setenv("WORLD_SIZE", n);
    long per = nodes ? n / nodes : n;
    sim_launch_setenv("LOCAL_WORLD_SIZE", per);
    sim_launch_setenv("GROUP_RANK", 0);

    struct sigaction sa = { .sa_handler = sim_launch_forward };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    for (long r = 0; r < n; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "simlaunch: fork: %s\n", strerror(errno));
            sim_launch_forward(SIGTERM);
            worst = 1;
            break;
        }
        if (pid == 0) {
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            sim_launch_setenv("RANK", r);
            sim_launch_setenv("LOCAL_RANK", r % per);
            if (nodes) {
                sim_launch_setenv("GROUP_RANK", r / per);
                sim_launch_node(r / per);
            }
            execvp(argv[i], argv + i);
            fprintf(stderr, "simlaunch: cannot run %s: %s\n", argv[i], strerror(errno));
            _exit(127);
        }
        sim_launch_pids[sim_launch_n++] = pid;
    }
    for (int left = sim_launch_n; left > 0;) {
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int k = 0; k < sim_launch_n; k++)
            if (sim_launch_pids[k] == pid)
                sim_launch_pids[k] = 0;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
        if (code > worst)
            worst = code;
        left--;
    }
    return worst;
}
