/* The reporter as an MPI program (mpi.h). Without RSR_HAVE_MPI (a build
 * without libopenmpi-dev, or `make MPI=0`) there is always one process and
 * none of these functions talks to anyone. */
#include "reporter/mpi/mpi.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#ifdef RSR_HAVE_MPI
#include <mpi.h>
#endif

double rsr_peak_rss_mb(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (double)ru.ru_maxrss / 1024.0;   /* KB on Linux */
}

/* CPUs this process may run on (its affinity: mpirun binds ranks). */
static int cpus_allowed(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static long env_long(const char *name)
{
    const char *s = getenv(name);
    return s && *s ? strtol(s, NULL, 10) : -1;
}

/* How many tasks the launcher says it started, 0 when no MPI launcher did
 * (a batch script has SLURM_* variables but is one task, with no step). */
static long launcher_tasks(void)
{
    long n = env_long("OMPI_COMM_WORLD_SIZE");
    if (n > 0)
        return n;
    if ((n = env_long("PMI_SIZE")) > 0)
        return n;
    if (getenv("PMIX_RANK") || getenv("PMI_RANK"))
        return 1;
    if ((n = env_long("SLURM_STEP_NUM_TASKS")) > 1)
        return n;
    return 0;
}

#ifdef RSR_HAVE_MPI
/* srun started this task with no MPI plugin to join it to the others
 * (MpiDefault=none and no --mpi=): MPI_Init would abort with its own
 * message, or make each task a job of one. */
static int srun_without_mpi(void)
{
    return env_long("SLURM_STEP_NUM_TASKS") > 1 && !getenv("PMIX_RANK") && !getenv("PMI_RANK") &&
           !getenv("PMI_FD") && !getenv("OMPI_COMM_WORLD_SIZE");
}

static void say_unjoined(long tasks, int seen)
{
    if (env_long("SLURM_PROCID") <= 0 && env_long("OMPI_COMM_WORLD_RANK") <= 0)
        fprintf(stderr,
                "ringside: started as one of %ld tasks, but MPI sees %d process%s: under srun, give --mpi=pmix "
                "(see `srun --mpi=list`); or set RINGSIDE_MPI=0\n", tasks, seen, seen == 1 ? "" : "es");
}
#endif

int rsr_mpi_built(void)
{
#ifdef RSR_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

int rsr_mpi_start(struct rsr_mpi *mp)
{
    memset(mp, 0, sizeof *mp);
    mp->size = 1;
    mp->threads = cpus_allowed();
    long tasks = launcher_tasks();
    const char *off = getenv("RINGSIDE_MPI");
    if (tasks <= 0 || (off && strcmp(off, "0") == 0))
        return 0;
#ifdef RSR_HAVE_MPI
    if (srun_without_mpi()) {
        say_unjoined(tasks, 1);
        return -1;
    }
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
        fprintf(stderr, "ringside: MPI_Init failed (set RINGSIDE_MPI=0 to run as one process)\n");
        return -1;
    }
    mp->started = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &mp->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mp->size);
    if (mp->size < tasks) {
        /* Each task would think itself alone and write the whole report. */
        say_unjoined(tasks, mp->size);
        return -1;
    }
    /* Loader threads: the CPUs bound to this process, or the node's shared
     * by the processes on it. */
    MPI_Comm node;
    int local = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (local > 1 && mp->threads >= online)
        mp->threads = mp->threads / local > 0 ? mp->threads / local : 1;
    return 0;
#else
    if (tasks > 1 && env_long("SLURM_PROCID") <= 0 && env_long("OMPI_COMM_WORLD_RANK") <= 0)
        fprintf(stderr, "ringside: started as one of %ld tasks, but this ringside was built without MPI "
                        "(install libopenmpi-dev and rebuild; or set RINGSIDE_MPI=0)\n", tasks);
    if (tasks > 1)
        return -1;
    return 0;
#endif
}

void rsr_mpi_end(struct rsr_mpi *mp)
{
#ifdef RSR_HAVE_MPI
    if (mp->started)
        MPI_Finalize();
#endif
    mp->started = 0;
}

#ifdef RSR_HAVE_MPI
enum { TAG_SIZE = 1, TAG_DATA = 2 };
/* MPI counts are ints: large buffers go in pieces of this many bytes. */
#define PIECE (1u << 30)
#endif

int rsr_mpi_share_files(const struct rsr_mpi *mp, char ***files, int *n)
{
    if (mp->size == 1)
        return 0;
#ifdef RSR_HAVE_MPI
    /* The names travel as one block of NUL-terminated strings. */
    long long len = 0;
    if (mp->rank == 0)
        for (int i = 0; i < *n; i++)
            len += (long long)strlen((*files)[i]) + 1;
    long long head[2] = { *n, len };
    MPI_Bcast(head, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (head[0] <= 0) {
        *n = (int)head[0];
        return 0;
    }
    char *block = malloc((size_t)head[1]);
    if (!block)
        return -1;
    if (mp->rank == 0) {
        char *p = block;
        for (int i = 0; i < *n; i++) {
            size_t k = strlen((*files)[i]) + 1;
            memcpy(p, (*files)[i], k);
            p += k;
        }
    }
    for (long long off = 0; off < head[1]; off += PIECE) {
        long long k = head[1] - off < PIECE ? head[1] - off : PIECE;
        MPI_Bcast(block + off, (int)k, MPI_CHAR, 0, MPI_COMM_WORLD);
    }
    if (mp->rank != 0) {
        *n = (int)head[0];
        *files = calloc((size_t)*n, sizeof **files);
        if (!*files) {
            free(block);
            return -1;
        }
        const char *p = block;
        for (int i = 0; i < *n; i++) {
            (*files)[i] = strdup(p);
            if (!(*files)[i]) {
                free(block);
                return -1;
            }
            p += strlen(p) + 1;
        }
    }
    free(block);
    return 0;
#else
    (void)files, (void)n;
    return 0;
#endif
}

void rsr_mpi_share_ints(const struct rsr_mpi *mp, int *v, int n)
{
#ifdef RSR_HAVE_MPI
    if (mp->size > 1)
        MPI_Bcast(v, n, MPI_INT, 0, MPI_COMM_WORLD);
#else
    (void)mp, (void)v, (void)n;
#endif
}

int rsr_mpi_send(const struct rsr_mpi *mp, const struct rsr_pack *b)
{
#ifdef RSR_HAVE_MPI
    unsigned long long size = b->n;
    if (mp->size == 1 || MPI_Send(&size, 1, MPI_UNSIGNED_LONG_LONG, 0, TAG_SIZE, MPI_COMM_WORLD) != MPI_SUCCESS)
        return -1;
    for (size_t off = 0; off < b->n; off += PIECE) {
        size_t k = b->n - off < PIECE ? b->n - off : PIECE;
        if (MPI_Send(b->p + off, (int)k, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD) != MPI_SUCCESS)
            return -1;
    }
    return 0;
#else
    (void)mp, (void)b;
    return -1;
#endif
}

int rsr_mpi_recv(const struct rsr_mpi *mp, struct rsr_pack *b, int *from)
{
#ifdef RSR_HAVE_MPI
    unsigned long long size;
    MPI_Status st;
    if (mp->size == 1 ||
        MPI_Recv(&size, 1, MPI_UNSIGNED_LONG_LONG, MPI_ANY_SOURCE, TAG_SIZE, MPI_COMM_WORLD, &st) != MPI_SUCCESS)
        return -1;
    *from = st.MPI_SOURCE;
    rsr_pack_free(b);
    b->p = malloc(size ? size : 1);
    if (!b->p)
        return -1;
    b->n = b->cap = size;
    for (size_t off = 0; off < size; off += PIECE) {
        size_t k = size - off < PIECE ? size - off : PIECE;
        if (MPI_Recv(b->p + off, (int)k, MPI_BYTE, *from, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS)
            return -1;
    }
    return 0;
#else
    (void)mp, (void)b, (void)from;
    return -1;
#endif
}
