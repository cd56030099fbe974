/* The page's off-CPU section (see html_waits.h): a table of the processes
 * that were blocked longest (their threads' times added up, in
 * thread-seconds, and the most blocked thread's own), then one bar per
 * thread, running beside blocked, on a scale shared by the threads of a
 * process. */
#include "reporter/out/html_waits.h"
#include "reporter/out/html_json.h"
#include "reporter/out/html_names.h"

#include <stdint.h>
#include <stdlib.h>

struct shown {
    yajl_val p;
    double wait_s;
};

static int by_wait(const void *pa, const void *pb)
{
    const struct shown *a = pa, *b = pb;
    return (a->wait_s < b->wait_s) - (a->wait_s > b->wait_s);
}

static void td_s(FILE *f, double s)
{
    char b[32] = "&ndash;";
    if (s > 0)
        rsr_html_fmt_ns(b, sizeof b, s * 1e9);
    fprintf(f, "<td class=\"n\" data-v=\"%.17g\">%s</td>", s, b);
}

/* Time added up over threads, in thread-seconds (the column says so). */
static void td_thread_s(FILE *f, double s)
{
    if (s > 0)
        fprintf(f, "<td class=\"n\" data-v=\"%.17g\">%.3g</td>", s, s);
    else
        fputs("<td class=\"n\" data-v=\"0\">&ndash;</td>", f);
}

/* The three longest reasons in thread-seconds, "poll 4.94, condvar 4.12, ...". */
static void top_reasons(FILE *f, yajl_val waits)
{
    size_t n = rsr_jv_len(waits), used[3] = { SIZE_MAX, SIZE_MAX, SIZE_MAX };
    fputs("<td>", f);
    for (int k = 0; k < 3; k++) {
        double best = 0;
        for (size_t i = 0; i < n; i++) {
            double t = rsr_jv_knum_or(rsr_jv_at(waits, i), "total_s", 0);
            if (t > best && i != used[0] && i != used[1]) {
                best = t;
                used[k] = i;
            }
        }
        if (used[k] == SIZE_MAX)
            break;
        fputs(k ? ", " : "", f);
        rsr_html_text(f, rsr_jv_kstr(rsr_jv_at(waits, used[k]), "reason"));
        fprintf(f, " %.3g", best);
    }
    fputs("</td>", f);
}

static void thread_bars(FILE *f, const struct rsr_html_names *names, yajl_val p)
{
    yajl_val th = rsr_jv_key(p, "threads");
    double most = 0;
    for (size_t i = 0; i < rsr_jv_len(th); i++) {
        yajl_val t = rsr_jv_at(th, i);
        double v = rsr_jv_knum_or(t, "cpu_s", 0) + rsr_jv_knum_or(t, "wait_s", 0);
        most = v > most ? v : most;
    }
    if (most <= 0)
        return;
    fputs("<div class=\"thr\"><span class=\"pn\">", f);
    rsr_html_proc(f, names, p);
    fprintf(f, "</span> <span class=\"note\">%zu of %.0f threads</span>\n", rsr_jv_len(th),
            rsr_jv_knum_or(p, "threads_sampled", (double)rsr_jv_len(th)));
    for (size_t i = 0; i < rsr_jv_len(th); i++) {
        yajl_val t = rsr_jv_at(th, i);
        double run = rsr_jv_knum_or(t, "cpu_s", 0), wait = rsr_jv_knum_or(t, "wait_s", 0);
        const char *name = rsr_jv_kstr(t, "name");
        char r[32], w[32];
        rsr_html_fmt_ns(r, sizeof r, run * 1e9);
        rsr_html_fmt_ns(w, sizeof w, wait * 1e9);
        fputs("<div class=\"trow\"><span class=\"tn\">", f);
        rsr_html_text(f, name && *name ? name : "thread");
        fprintf(f, " %.0f</span><span class=\"tb\"><span class=\"run\" style=\"width:%.2f%%\"></span>"
                   "<span class=\"blk\" style=\"width:%.2f%%\"></span></span>"
                   "<span class=\"note\">running %s, blocked %s</span></div>\n",
                rsr_jv_knum_or(t, "tid", 0), 100 * run / most, 100 * wait / most, r, w);
    }
    fputs("</div>\n", f);
}

void rsr_html_offcpu(FILE *f, yajl_val procs, const struct rsr_html_names *names)
{
    size_t n = rsr_jv_len(procs), m = 0;
    struct shown *v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return;
    for (size_t i = 0; i < n; i++) {
        yajl_val p = rsr_jv_at(procs, i);
        if (rsr_jv_key(p, "waits"))
            v[m++] = (struct shown){ p, rsr_jv_knum_or(p, "wait_s", 0) };
    }
    if (!m) {
        free(v);
        return;
    }
    qsort(v, m, sizeof *v, by_wait);
    size_t shown = m < RSR_HTML_WAIT_PROCS ? m : RSR_HTML_WAIT_PROCS;
    fputs("<section id=\"offcpu\"><h2>Off-CPU time</h2><p class=\"note\">From the CPU and wait samples: "
          "how long threads ran and how long they were blocked (calls that blocked at least "
          "RINGSIDE_WAIT_US), why, and the causes the findings name. Running, blocked, the reasons and "
          "the causes add up over a process's threads, in thread-seconds (two threads blocked in the "
          "same second count 2), so they can pass the wall time; the most blocked thread's own time "
          "cannot. The wait flame graphs below show where.</p>\n"
          "<table class=\"sort\" id=\"table-offcpu\"><thead><tr><th>process</th><th class=\"n\">threads</th>"
          "<th class=\"n\">wall</th><th class=\"n\">most blocked thread</th>"
          "<th class=\"n\" data-keep>running, thread-s</th><th class=\"n\" data-keep>blocked, thread-s</th>"
          "<th>longest reasons, thread-s</th><th class=\"n\">DataLoader, thread-s</th>"
          "<th class=\"n\">GIL, thread-s</th><th class=\"n\">rendezvous, thread-s</th>"
          "<th class=\"n\">collectives, thread-s</th></tr></thead><tbody>\n", f);
    for (size_t i = 0; i < shown; i++) {
        yajl_val p = v[i].p, c = rsr_jv_key(p, "wait_causes");
        fputs("<tr><td>", f);
        rsr_html_proc(f, names, p);
        fputs("</td>", f);
        fprintf(f, "<td class=\"n\" data-v=\"%.0f\">%.0f</td>", rsr_jv_knum_or(p, "threads_sampled", 0),
                rsr_jv_knum_or(p, "threads_sampled", 0));
        td_s(f, rsr_jv_knum_or(p, "wall_s", 0));
        td_s(f, rsr_jv_knum_or(p, "most_blocked_thread_s", 0));
        /* running and blocked stay beside each other even at 0: threads
         * that never ran are what this table shows */
        td_thread_s(f, rsr_jv_knum_or(p, "cpu_s", 0));
        td_thread_s(f, v[i].wait_s);
        top_reasons(f, rsr_jv_key(p, "waits"));
        td_thread_s(f, rsr_jv_knum_or(c, "dataloader_s", 0));
        td_thread_s(f, rsr_jv_knum_or(c, "gil_s", 0));
        td_thread_s(f, rsr_jv_knum_or(c, "rendezvous_s", 0));
        td_thread_s(f, rsr_jv_knum_or(c, "collective_s", 0));
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    if (m > shown)
        fprintf(f, "<p class=\"note\">%zu of %zu processes with samples shown; report.json has them all.</p>\n",
                shown, m);
    fputs("<h3>Threads: <span class=\"key run\"></span>running against <span class=\"key blk\"></span>blocked</h3>\n", f);
    for (size_t i = 0; i < shown; i++)
        thread_bars(f, names, v[i].p);
    fputs("</section>\n", f);
    free(v);
}
