/* The reporter's processes: one, or the processes of an MPI job when
 * `ringside report` (or `export`) is started by mpirun or srun and was
 * built with MPI (Debian libopenmpi-dev; `make MPI=0` builds without). The
 * first process finds the trace files and hands each process its share;
 * the others stream theirs into summaries and send them, packed (pack.h),
 * to the first, which writes the one report. */
#ifndef RSR_MPI_H
#define RSR_MPI_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/mpi/pack.h"

struct rsr_mpi {
    int rank, size;     /* this process and how many there are (1: no MPI) */
    int threads;        /* loader threads for this process's share */
    int started;        /* MPI_Init ran (rsr_mpi_end finalizes) */
};

/* Sets up *mp: MPI is started only when the environment says an MPI
 * launcher started this process (OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK,
 * or srun's SLURM_STEP_NUM_TASKS above 1) and RINGSIDE_MPI is not 0.
 * Returns 0, or -1 after one line on stderr (a launcher started several
 * tasks but MPI sees only this one: srun without --mpi=pmix, say). */
int rsr_mpi_start(struct rsr_mpi *mp);

/* Ends MPI if it was started. */
void rsr_mpi_end(struct rsr_mpi *mp);

/* Whether this build can run as an MPI program. */
int rsr_mpi_built(void);

/* The first process's file list, files[0..*n), to every process (the
 * others' *files and *n are replaced; *n < 0 says the first failed). */
int rsr_mpi_share_files(const struct rsr_mpi *mp, char ***files, int *n);

/* owner[0..n) from the first process to every process. */
void rsr_mpi_share_ints(const struct rsr_mpi *mp, int *v, int n);

/* Sends b to the first process (any size); 0, or -1 on an MPI error. */
int rsr_mpi_send(const struct rsr_mpi *mp, const struct rsr_pack *b);

/* On the first process: the next buffer sent by any other into *b
 * (replacing what it held); *from gets the sender. 0, or -1 when out of
 * memory or on an MPI error. */
int rsr_mpi_recv(const struct rsr_mpi *mp, struct rsr_pack *b, int *from);

/* Peak resident memory of this process so far, MB. */
double rsr_peak_rss_mb(void);

#endif
