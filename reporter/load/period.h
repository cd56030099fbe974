/* A process's steps, found with no code change from the repetition of its
 * work: the sequence of its collectives, or of its kernels when it has
 * none (summary.c marks them as the file streams past; steps.h puts the
 * steps on the job's time line).
 *
 * How a process's steps are found (rsr_steps_find):
 *   - each mark is a symbol: its key (collective: operation, communicator,
 *     bytes; kernel: name) and one bit, whether the GPU idle gap before it
 *     is long (the longer of two classes of gaps split by Otsu's method on
 *     their logarithms, when the classes are well apart; Otsu's split of
 *     the shorter class instead when the marks above that are much more
 *     regular: a busy host holds a few marks for milliseconds, at random),
 *     because equal buckets make equal keys and only the gaps tell where a
 *     step starts;
 *   - the period P is the commonest distance between two marks with long
 *     gaps, when symbols that far apart agree (share >= 0.6); without long
 *     gaps, the smallest period at which symbols agree nearly as often as
 *     at the best one (within 0.1, and >= 0.6). Looked for in the first
 *     RSR_STEPS_LEARN symbols, P at most a third of them;
 *   - the signature is the most frequent window of P symbols, rotated to
 *     begin at the position with the longest median gap (a step begins
 *     after the host's sync, data loading or a checkpoint), on a tie at
 *     the position of the first mark; but where the marks are its keys
 *     repeated whole from the first mark to the last, at the first mark
 *     (a pipeline stage's longest wait is inside its step); and where the
 *     first marks are one step rotated and the steps begun there are two
 *     or more more than the gaps' rotation finds, there too (a pipeline
 *     stage with evaluation or checkpoints between its steps);
 *   - the marks are scanned in order: where the next P keys are the
 *     signature's (and, when its first key is not unique in it, the first
 *     has a long gap, or the scan is in phase and the keys go on step by
 *     step to a first mark that has one, or to the end, within 8 steps),
 *     that is a training step; elsewhere one mark is
 *     skipped. A checkpoint or an evaluation between steps, jitter, or a
 *     first step that differs only leave marks unmatched;
 *   - the unmatched marks are searched the same way for a second
 *     signature: its steps are the evaluation phase when they move fewer
 *     bytes (kernels: run fewer kernels) than a training step, else
 *     "other"; each run of marks still unmatched is one step of phase
 *     "other".
 * A step runs from its first mark's time to the next mark's (the last: to
 * the end of the process's GPU work). Its confidence is the share of
 * agreeing symbols at the period times the share of marks inside training
 * and evaluation steps. */
#ifndef RSR_PERIOD_H
#define RSR_PERIOD_H

#include <stddef.h>
#include <stdint.h>

/* Symbols the period is looked for in, and the longest period. */
#define RSR_STEPS_LEARN 8192
#define RSR_STEPS_MAX_PERIOD 2048
/* Fewer training steps than this on a process: no steps. */
#define RSR_STEPS_MIN 3
#define RSR_STEP_PHASES(X) \
    X(TRAIN, "train") \
    X(EVAL,  "eval") \
    X(OTHER, "other")

enum rsr_step_phase {
#define RSR_STEP_PHASE_ENUM(name, text) RSR_PHASE_##name,
    RSR_STEP_PHASES(RSR_STEP_PHASE_ENUM)
#undef RSR_STEP_PHASE_ENUM
    RSR_NPHASES
};

const char *rsr_step_phase_name(int phase);

/* A run of marks that is one step. */
struct rsr_step_seg {
    size_t first, n;
    uint8_t phase;              /* enum rsr_step_phase */
};

struct rsr_steps_found {
    size_t period;              /* marks per training step; 0: no repeating structure */
    uint32_t anchor_key;        /* the key a training step begins with */
    int anchor_unique;          /* it occurs once in a training step */
    double score;               /* share of symbols one period apart that agree */
    double covered;             /* share of marks in training and evaluation steps */
    struct rsr_step_seg *segs;  /* in order; NULL when period is 0 */
    size_t n_segs, n_train;
};

/* Finds the steps of one process in its marks' keys, gaps (ns) and weights (what a mark moves: bytes,
 * or 1 per kernel), n of each, into *out (zeroed first; free with
 * rsr_steps_found_free). out->period is 0 when there is no repetition or
 * fewer than RSR_STEPS_MIN training steps. Returns 0, or -1 when out of
 * memory. */
int rsr_steps_find(const uint32_t *key, const int64_t *gap, const double *weight, size_t n,
                   struct rsr_steps_found *out);

void rsr_steps_found_free(struct rsr_steps_found *f);

/* A process's marks as rsr_steps_find_in reads them: every key in memory
 * (4 bytes a mark), the gaps and weights asked for one mark at a time,
 * in order within each pass (the marks may be read from a file a block at
 * a time): gap returns 0, or -1 when the mark cannot be read. */
struct rsr_steps_src {
    size_t n;
    const uint32_t *key;
    int (*gap)(void *ctx, size_t i, int64_t *gap);
    double (*weight)(void *ctx, size_t i, uint32_t key);
    void *ctx;
};

/* rsr_steps_find over src, in memory that grows by 6 bytes a mark (its
 * key, a bit and a code) and no more: the steps are handed to emit (when
 * not NULL) in order, as they are found, and counted in out->n_segs
 * (out->segs stays NULL). emit returns 0, or -1 to stop (then -1). */
int rsr_steps_find_in(const struct rsr_steps_src *src, struct rsr_steps_found *out,
                      int (*emit)(void *ctx, const struct rsr_step_seg *seg), void *ectx);

/* The key that occurs most often in key[0..n) into *best (on a tie, the
 * smallest), and that count into *count (0 when n is 0): the step anchor
 * of a process's main-thread waits (summary.h's kmark_waits), where each
 * step waits once in the same stack (a data-parallel rank's collective on
 * the CPU) among waits that come and go. 0, or -1 when out of memory. */
int rsr_steps_commonest(const uint32_t *key, size_t n, uint32_t *best, size_t *count);

/* Whether a range's name marks a step: "step" or "iter" in any case
 * (ProfilerStep#12, train_step, Iteration). A process with RSR_STEPS_MIN or
 * more such ranges has its steps from them, source "nvtx" ("kineto" when
 * they are all ProfilerStep#N), phase eval where the name says eval or
 * valid; else from the repetition of its work. */
int rsr_step_range_name(const char *name);

#endif
