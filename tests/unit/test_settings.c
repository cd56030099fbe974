/* Unit tests of the agent's settings and identity (preload/config.c): the
 * defaults against the README's table of settings, values set in the
 * environment read back, each bound taken and one past it refused with a
 * notice (read back from stderr) and the default kept, malformed values,
 * and the identity from launcher variables against getpid, getppid and
 * getcwd. Every test starts from an environment without RINGSIDE_* and
 * launcher variables. */
#include "rs_agent_unit.h"

#include <stdio.h>

extern char **environ;

/* Unsets every RINGSIDE_* variable and the launchers' (config.c's list). */
static void env_clean(void)
{
    static const char *const launch[] = {
        "RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid", "PMI_RANK",
        "MPI_LOCALRANKID", "PMI_SIZE", "PMIX_NAMESPACE", "SLURM_PROCID", "SLURM_LOCALID",
        "SLURM_NTASKS", "SLURM_STEP_ID", "SLURM_JOB_ID",
    };
    for (size_t i = 0; i < sizeof launch / sizeof launch[0]; i++)
        unsetenv(launch[i]);
    for (;;) {
        char name[256] = "";
        for (char **e = environ; *e; e++)
            if (strncmp(*e, "RINGSIDE_", 9) == 0) {
                snprintf(name, sizeof name, "%.*s", (int)strcspn(*e, "="), *e);
                break;
            }
        if (!name[0])
            break;
        unsetenv(name);
    }
}

static void load(void)
{
    char *argv[] = { (char *)"unit", NULL };
    rs_config_load(1, argv);
}

/* Loads the settings with name=value set, and returns what the agent wrote
 * on stderr meanwhile. */
static const char *load_with(const char *name, const char *value, char *err, size_t n)
{
    env_clean();
    setenv(name, value, 1);
    struct captured c = stderr_begin();
    load();
    return stderr_end(c, err, n);
}

/* The settings that are numbers, and where rs_cfg keeps each. */
struct knob {
    const char *name;
    long lo, hi;
    long (*get)(void);
};

static long get_disable(void) { return rs_cfg.disable; }
static long get_io(void) { return rs_cfg.io; }
static long get_cuda(void) { return rs_cfg.cuda; }
static long get_nccl(void) { return rs_cfg.nccl; }
static long get_sample_hz(void) { return rs_cfg.sample_hz; }
static long get_buffer_mb(void) { return (long)(rs_cfg.buffer_bytes >> 20); }
static long get_flush_ms(void) { return (long)rs_cfg.flush_ms; }
static long get_wait_us(void) { return rs_cfg.wait_us; }
static long get_gpu_stack_every(void) { return rs_cfg.gpu_stack_every; }
static long get_own_fds(void) { return rs_cfg.own_fds; }
static long get_hang_s(void) { return rs_cfg.hang_s; }
static long get_metrics_hz(void) { return rs_cfg.metrics_hz; }
static long get_log(void) { return rs_cfg.log; }
static long get_gpu_timing(void) { return rs_cfg.gpu_timing; }

static const struct knob knobs[] = {
    { "RINGSIDE_DISABLE", 0, 1, get_disable },
    { "RINGSIDE_IO", 0, 1, get_io },
    { "RINGSIDE_CUDA", 0, 1, get_cuda },
    { "RINGSIDE_NCCL", 0, 1, get_nccl },
    { "RINGSIDE_SAMPLE_HZ", 0, 100000, get_sample_hz },
    { "RINGSIDE_BUFFER_MB", 1, 1 << 20, get_buffer_mb },
    { "RINGSIDE_FLUSH_MS", 10, 3600 * 1000, get_flush_ms },
    { "RINGSIDE_WAIT_US", 0, 3600L * 1000000, get_wait_us },
    { "RINGSIDE_GPU_STACK_EVERY", 0, 1000000000, get_gpu_stack_every },
    { "RINGSIDE_OWN_FDS", 0, 1, get_own_fds },
    { "RINGSIDE_HANG_S", 0, 365L * 86400, get_hang_s },
    { "RINGSIDE_METRICS_HZ", 0, 1000, get_metrics_hz },
    { "RINGSIDE_LOG", 0, 2, get_log },
    { "RINGSIDE_GPU_TIMING", 1, 1000000000, get_gpu_timing },
};
#define NKNOBS (sizeof knobs / sizeof knobs[0])

/* The README's default for name: the last cell of the settings table's row
 * that names it ("| `RINGSIDE_IO` / `RINGSIDE_CUDA` ... | ... | `1` |"),
 * without its backquotes, into out. 1 when found. */
static int readme_default(const char *name, char *out, size_t n)
{
    FILE *f = fopen(RS_SRC_DIR "/README.md", "r");
    ck_assert_msg(f != NULL, "cannot open %s", RS_SRC_DIR "/README.md");
    char line[1024], quoted[128];
    snprintf(quoted, sizeof quoted, "`%s`", name);
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *first_end = line[0] == '|' ? strchr(line + 1, '|') : NULL;
        if (!first_end)
            continue;
        *first_end = 0;
        if (!strstr(line, quoted))
            continue;
        char *end = strrchr(first_end + 1, '|');
        *end = 0;
        char *cell = strrchr(first_end + 1, '|') + 1;
        cell += strspn(cell, " `");
        cell[strcspn(cell, "`")] = 0;
        snprintf(out, n, "%s", cell);
        found = 1;
    }
    fclose(f);
    return found;
}

START_TEST(defaults_as_documented)
{
    env_clean();
    char err[4096];
    struct captured c = stderr_begin();
    load();
    ck_assert_str_eq(stderr_end(c, err, sizeof err), "");
    for (size_t i = 0; i < NKNOBS; i++) {
        char dflt[64];
        ck_assert_msg(readme_default(knobs[i].name, dflt, sizeof dflt), "%s: not in the README's table",
                      knobs[i].name);
        /* GPU timing "all" is one launch in 1 */
        long want = strcmp(dflt, "all") == 0 ? 1 : strtol(dflt, NULL, 10);
        ck_assert_msg(knobs[i].get() == want, "%s: %ld, the README says %s", knobs[i].name, knobs[i].get(), dflt);
    }
    char dflt[PATH_MAX], cwd[PATH_MAX], want[2 * PATH_MAX];
    ck_assert(readme_default("RINGSIDE_IO_EXCLUDE", dflt, sizeof dflt));
    ck_assert_str_eq(rs_cfg.exclude, dflt);
    ck_assert(readme_default("RINGSIDE_OUT", dflt, sizeof dflt));
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(want, sizeof want, "%s/%s", cwd, dflt + (strncmp(dflt, "./", 2) == 0 ? 2 : 0));
    ck_assert_str_eq(rs_cfg.out, want);
}
END_TEST

/* Each bound is taken as given; one past it is refused, with one notice
 * naming the variable and the value, and the default is kept. */
START_TEST(bounds)
{
    char err[4096], v[64];
    env_clean();
    load();
    long dflt[NKNOBS];
    for (size_t i = 0; i < NKNOBS; i++)
        dflt[i] = knobs[i].get();
    for (size_t i = 0; i < NKNOBS; i++) {
        const struct knob *k = &knobs[i];
        long edge[2] = { k->lo, k->hi };
        for (int j = 0; j < 2; j++) {
            snprintf(v, sizeof v, "%ld", edge[j]);
            const char *out = load_with(k->name, v, err, sizeof err);
            /* RINGSIDE_LOG=0 is taken, and silences nothing here */
            ck_assert_msg(out[0] == 0, "%s=%s: '%s'", k->name, v, out);
            ck_assert_msg(k->get() == edge[j], "%s=%s read back as %ld", k->name, v, k->get());

            snprintf(v, sizeof v, "%ld", j ? k->hi + 1 : k->lo - 1);
            out = load_with(k->name, v, err, sizeof err);
            ck_assert_msg(k->get() == dflt[i], "%s=%s: %ld, not the default %ld", k->name, v, k->get(), dflt[i]);
            char want[128];
            snprintf(want, sizeof want, "ringside: %s=%s ", k->name, v);
            ck_assert_msg(strncmp(out, want, strlen(want)) == 0 && strchr(out, '\n') == out + strlen(out) - 1,
                          "%s=%s: one notice expected, stderr '%s'", k->name, v, out);
        }
    }
}
END_TEST

/* Values inside the bounds read back as set, in rs_cfg and in the pairs
 * that go to the trace's Meta. */
START_TEST(values_read_back)
{
    env_clean();
    static const char *const set[][2] = {
        { "RINGSIDE_IO", "0" }, { "RINGSIDE_CUDA", "0" }, { "RINGSIDE_NCCL", "0" },
        { "RINGSIDE_GPU_TIMING", "7" }, { "RINGSIDE_SAMPLE_HZ", "250" }, { "RINGSIDE_BUFFER_MB", "3" },
        { "RINGSIDE_FLUSH_MS", "20" }, { "RINGSIDE_LOG", "0" }, { "RINGSIDE_WAIT_US", "0" },
        { "RINGSIDE_GPU_STACK_EVERY", "0" }, { "RINGSIDE_OWN_FDS", "0" },
        { "RINGSIDE_IO_EXCLUDE", "/a/b:/c" },
    };
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        setenv(set[i][0], set[i][1], 1);
    load();
    ck_assert_uint_eq(rs_cfg.buffer_bytes, 3u << 20);
    ck_assert_int_eq(rs_cfg.sample_hz, 250);
    ck_assert_int_eq(rs_cfg.gpu_timing, 7);
    ck_assert_str_eq(rs_cfg.exclude, "/a/b:/c");
    const char *keys[32], *values[32];
    int n = rs_config_pairs(keys, values, 32);
    /* every pair's value is the one set, by the pair's own name */
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "%s", set[i][0] + 9);
        for (char *p = key; *p; p++)
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        int found = 0;
        for (int j = 0; j < n; j++)
            if (strcmp(keys[j], key) == 0) {
                ck_assert_msg(strcmp(values[j], set[i][1]) == 0, "%s: '%s', set '%s'", key, values[j], set[i][1]);
                found = 1;
            }
        ck_assert_msg(found, "no pair %s", key);
    }
    /* fewer slots than pairs: no more than asked */
    ck_assert_int_eq(rs_config_pairs(keys, values, 3), 3);
}
END_TEST

START_TEST(malformed_values)
{
    static const char *const bad[] = { "ten", "12abc", "1.5", "0x10", "-", "99999999999999999999" };
    char err[4096];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *out = load_with("RINGSIDE_SAMPLE_HZ", bad[i], err, sizeof err);
        ck_assert_int_eq(rs_cfg.sample_hz, 99);
        char want[128];
        snprintf(want, sizeof want, "ringside: RINGSIDE_SAMPLE_HZ=%s is not a number", bad[i]);
        ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "'%s'", out);
    }
    /* set but empty: as if unset, and nothing said */
    const char *out = load_with("RINGSIDE_SAMPLE_HZ", "", err, sizeof err);
    ck_assert_int_eq(rs_cfg.sample_hz, 99);
    ck_assert_str_eq(out, "");
    /* flags are 0 or 1 */
    out = load_with("RINGSIDE_IO", "yes", err, sizeof err);
    ck_assert_int_eq(rs_cfg.io, 1);
    ck_assert_ptr_nonnull(strstr(out, "RINGSIDE_IO=yes"));
    /* RINGSIDE_LOG=0: the default is kept without a word */
    env_clean();
    setenv("RINGSIDE_LOG", "0", 1);
    setenv("RINGSIDE_BUFFER_MB", "lots", 1);
    struct captured c = stderr_begin();
    load();
    ck_assert_str_eq(stderr_end(c, err, sizeof err), "");
    ck_assert_uint_eq(rs_cfg.buffer_bytes, 64u << 20);
}
END_TEST

START_TEST(gpu_timing_words)
{
    char err[4096];
    load_with("RINGSIDE_GPU_TIMING", "none", err, sizeof err);
    ck_assert_int_eq(rs_cfg.gpu_timing, 0);
    ck_assert_str_eq(err, "");
    load_with("RINGSIDE_GPU_TIMING", "all", err, sizeof err);
    ck_assert_int_eq(rs_cfg.gpu_timing, 1);
    ck_assert_str_eq(err, "");
    load_with("RINGSIDE_GPU_TIMING", "some", err, sizeof err);
    ck_assert_int_eq(rs_cfg.gpu_timing, 1);
    ck_assert_ptr_nonnull(strstr(err, "RINGSIDE_GPU_TIMING=some"));
}
END_TEST

/* RINGSIDE_OUT relative to the directory the process started in (as the
 * kernel names it), absolute as given; IO_EXCLUDE set but empty. */
START_TEST(output_folder_and_exclude)
{
    char dir[] = "/tmp/rs_unit_cwd_XXXXXX", cwd[PATH_MAX], want[2 * PATH_MAX];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_int_eq(chdir(dir), 0);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    env_clean();
    setenv("RINGSIDE_OUT", "traces/x", 1);
    setenv("RINGSIDE_IO_EXCLUDE", "", 1);
    load();
    snprintf(want, sizeof want, "%s/traces/x", cwd);
    ck_assert_str_eq(rs_cfg.out, want);
    ck_assert_str_eq(rs_cfg.exclude, "");
    setenv("RINGSIDE_OUT", "/var/tmp/abs", 1);
    load();
    ck_assert_str_eq(rs_cfg.out, "/var/tmp/abs");
    ck_assert_int_eq(chdir("/"), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* Rank, local rank, world size and job from torchrun's variables; a Slurm
 * batch script (no step) is no rank, a step's task is; pid and ppid as the
 * kernel gives them; argv copied, so that the program may rewrite its own. */
START_TEST(identity_from_launchers)
{
    env_clean();
    setenv("RANK", "3", 1);
    setenv("LOCAL_RANK", "1", 1);
    setenv("WORLD_SIZE", "8", 1);
    setenv("TORCHELASTIC_RUN_ID", "job/42", 1);
    char a0[] = "train", a1[] = "--lr";
    char *argv[] = { a0, a1, NULL };
    rs_config_load(2, argv);
    ck_assert_int_eq(rs_id.rank, 3);
    ck_assert_int_eq(rs_id.local_rank, 1);
    ck_assert_int_eq(rs_id.world_size, 8);
    ck_assert_str_eq(rs_id.job, "job_42"); /* a file name: no '/' */
    ck_assert_int_eq(rs_id.pid, getpid());
    ck_assert_int_eq(rs_id.ppid, getppid());
    a1[2] = 'X';
    ck_assert_int_eq(rs_id.argc, 2);
    ck_assert_str_eq(rs_id.argv[0], "train");
    ck_assert_str_eq(rs_id.argv[1], "--lr");

    env_clean();
    setenv("SLURM_PROCID", "0", 1);
    setenv("SLURM_NTASKS", "4", 1);
    setenv("SLURM_JOB_ID", "77", 1);
    load();
    ck_assert_int_eq(rs_id.rank, -1);
    ck_assert_str_eq(rs_id.job, "77");
    setenv("SLURM_PROCID", "2", 1);
    setenv("SLURM_LOCALID", "0", 1);
    setenv("SLURM_STEP_ID", "5", 1);
    load();
    ck_assert_int_eq(rs_id.rank, 2);
    ck_assert_int_eq(rs_id.world_size, 4);
    ck_assert_str_eq(rs_id.job, "77.5");
}
END_TEST

static Suite *settings_suite(void)
{
    const struct rs_test tests[] = {
        { "settings_defaults_as_documented", defaults_as_documented },
        { "settings_bounds", bounds },
        { "settings_values_read_back", values_read_back },
        { "settings_malformed_values", malformed_values },
        { "settings_gpu_timing_words", gpu_timing_words },
        { "settings_output_folder_and_exclude", output_folder_and_exclude },
        { "settings_identity_from_launchers", identity_from_launchers },
    };
    return RS_SUITE("settings", tests, 30);
}

RS_CHECK_MAIN(settings_suite)
