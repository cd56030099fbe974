/* Unit tests of the gate before the agent's walks of the loader's object
 * list (preload/unwind.c, included whole; the loader's state stood in): a
 * fork waits for other threads' walks, and a child forked while another
 * thread was still inside one (the fork's wait ran out) never walks, nor do
 * its own children, since that thread's locks are held there by no thread;
 * after a wait that ran out, the next forks wait 50 ms; a child forked after
 * the walks ended walks; a fork from inside a walk of
 * the forking thread's own does not wait for itself. Each fork runs the
 * three pthread_atfork handlers as the agent registers them. */
#include "rs_agent_unit.h"

#include "preload/unwind.c"

#include <pthread.h>
#include <semaphore.h>
#include <sys/wait.h>

static int loader_changing;

int rs_loader_busy(void)
{
    return loader_changing;
}

int rs_dlclose_quiet(void *handle)
{
    return dlclose(handle);
}

void *rs_resolve(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Another thread's walk: it enters, says so, stays inside for hold_ms
 * (or until released when hold_ms < 0), then leaves. */
struct walker {
    pthread_t t;
    sem_t inside, release;
    int hold_ms;
};

static void *walk(void *arg)
{
    struct walker *w = arg;
    ck_assert_int_eq(rs_dl_enter(), 1);
    sem_post(&w->inside);
    if (w->hold_ms >= 0)
        sleep_ms(w->hold_ms);
    else
        sem_wait(&w->release);
    rs_dl_leave();
    return NULL;
}

static void walker_start(struct walker *w, int hold_ms)
{
    w->hold_ms = hold_ms;
    sem_init(&w->inside, 0, 0);
    sem_init(&w->release, 0, 0);
    ck_assert_int_eq(pthread_create(&w->t, NULL, walk, w), 0);
    sem_wait(&w->inside);
}

static void walker_end(struct walker *w)
{
    if (w->hold_ms < 0)
        sem_post(&w->release);
    pthread_join(w->t, NULL);
}

/* fork() with the agent's handlers around it; the child's exit status
 * says whether it may walk (0), and whether a child of its own may (0 in
 * the second place: status = own + 2 * grandchild's). */
static int fork_and_ask(uint64_t *waited_ns)
{
    uint64_t t0 = rs_now();
    rs_dl_fork_prepare();
    *waited_ns = rs_now() - t0;
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        rs_dl_fork_child();
        int own = rs_dl_enter() ? 0 : 1;
        if (!own)
            rs_dl_leave();
        rs_dl_fork_prepare();
        pid_t g = fork();
        if (g == 0) {
            rs_dl_fork_child();
            _exit(rs_dl_enter() ? 0 : 1);
        }
        rs_dl_fork_parent();
        int st = 0;
        waitpid(g, &st, 0);
        _exit(own + 2 * (WIFEXITED(st) ? WEXITSTATUS(st) : 1));
    }
    rs_dl_fork_parent();
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* A walk that ends within the fork's wait: the fork waits for it, and the
 * child and grandchild walk. */
START_TEST(walk_ends_within_wait)
{
    struct walker w;
    walker_start(&w, 200);
    uint64_t waited;
    int st = fork_and_ask(&waited);
    walker_end(&w);
    ck_assert_msg(waited >= 150000000u, "the fork waited %llu ns for a 200 ms walk", (unsigned long long)waited);
    ck_assert_msg(st == 0, "child status %d: a child forked after the walk ended cannot walk", st);
}
END_TEST

/* A walk still under way when the wait runs out (its thread held there):
 * the fork goes on, and neither the child nor its child ever walks. */
START_TEST(walk_past_wait_shuts_child)
{
    struct walker w;
    walker_start(&w, -1);
    uint64_t waited;
    int st = fork_and_ask(&waited);
    ck_assert_msg(st == 3, "child status %d: a child forked mid-walk (own walk %s, grandchild's %s)", st,
                  st & 1 ? "refused" : "let in", st & 2 ? "refused" : "let in");
    ck_assert_msg(waited >= 1900000000u, "the fork waited %llu ns", (unsigned long long)waited);
    /* refused while a fork is under way, let in again after it */
    ck_assert_int_eq(rs_dl_enter(), 1);
    rs_dl_leave();
    walker_end(&w);
}
END_TEST

/* A walk that never ends (its thread jumped out of it): the first fork
 * waits 2 s, the next ones 50 ms, none of their children walks; once the
 * walk ends, forks wait for walks again and children walk. */
START_TEST(endless_walk_costs_one_wait)
{
    struct walker w;
    walker_start(&w, -1);
    uint64_t first, second, third;
    ck_assert_int_eq(fork_and_ask(&first), 3);
    ck_assert_int_eq(fork_and_ask(&second), 3);
    ck_assert_msg(first >= 1900000000u && second < 1000000000u, "the forks waited %llu and %llu ns",
                  (unsigned long long)first, (unsigned long long)second);
    walker_end(&w);
    ck_assert_int_eq(fork_and_ask(&third), 0);
    struct walker w2;
    walker_start(&w2, 200);
    ck_assert_int_eq(fork_and_ask(&third), 0);
    walker_end(&w2);
    ck_assert_msg(third >= 150000000u, "after the walk ended, a fork waited %llu ns for a 200 ms walk",
                  (unsigned long long)third);
}
END_TEST

/* A fork from inside this thread's own walk (a signal handler's) does not
 * wait for itself; the child walks. */
START_TEST(own_walk_not_waited)
{
    ck_assert_int_eq(rs_dl_enter(), 1);
    uint64_t waited;
    int st = fork_and_ask(&waited);
    rs_dl_leave();
    ck_assert_msg(waited < 1000000000u, "the fork waited %llu ns for its own thread", (unsigned long long)waited);
    ck_assert_msg(st == 0, "child status %d", st);
}
END_TEST

/* While a fork is under way, no thread goes in (nor counts itself in);
 * nor while the loader changes its list. */
START_TEST(closed_during_fork_and_loader_change)
{
    rs_dl_fork_prepare();
    ck_assert_int_eq(rs_dl_enter(), 0);
    /* refused without counting itself in, even for a moment: a child
     * forked then would take it for a walk under way */
    ck_assert_uint_eq(dl_word, DL_FORKING);
    rs_dl_fork_parent();
    ck_assert_int_eq(rs_dl_enter(), 1);
    rs_dl_leave();
    loader_changing = 1;
    ck_assert_int_eq(rs_dl_enter(), 0);
    loader_changing = 0;
    ck_assert_uint_eq(dl_word, 0);
}
END_TEST

static Suite *dlgate_suite(void)
{
    const struct rs_test tests[] = {
        { "dlgate_walk_ends_within_wait", walk_ends_within_wait },
        { "dlgate_walk_past_wait_shuts_child", walk_past_wait_shuts_child },
        { "dlgate_endless_walk_costs_one_wait", endless_walk_costs_one_wait },
        { "dlgate_own_walk_not_waited", own_walk_not_waited },
        { "dlgate_closed_during_fork_and_loader_change", closed_during_fork_and_loader_change },
    };
    return RS_SUITE("dlgate", tests, 30);
}

RS_CHECK_MAIN(dlgate_suite)
