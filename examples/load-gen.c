/* load-gen: Momento's Node.js load generator, in C. Workers run set-then-get
 * against Momento, a compatible server, or (with no target given) a local
 * server started in-process; stats print as they accumulate and at the end.
 * Run with --help for every option. */
#include "common/loadgen.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    lg_tune_process();
    lg_options o;
    int rc = lg_parse_options(argc, argv, false, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    lg_target t;
    if (lg_target_open(&t, &o) != MOMENTO_OK)
        return 1;
    char deadlines[64], batching[160];
    printf("load-gen: target %s; %d workers, %s, %.1f s; %s%s\n", t.description, o.concurrency,
           o.rps ? "rate-limited" : "no rate limit", o.duration_s,
           lg_describe_deadlines(&o, deadlines, sizeof(deadlines)),
           lg_describe_batching(&o, batching, sizeof(batching)));
    lg_result r;
    rc = lg_run(&o, &t, false, "", &r);
    if (rc == MOMENTO_OK) {
        lg_print_summary(stdout, "", &r);
        if (o.json_path) {
            FILE *f = fopen(o.json_path, "w");
            if (!f) {
                fprintf(stderr, "load-gen: cannot write %s\n", o.json_path);
                rc = 1;
            } else {
                lg_json_run(f, &o, &r, 0);
                fprintf(f, "\n");
                fclose(f);
            }
        }
    } else {
        fprintf(stderr, "load-gen: %s\n", momento_strerror(rc));
    }
    lg_target_close(&t);
    if (rc == MOMENTO_OK && r.stats.success == 0) {
        /* A load test in which nothing worked has failed, whatever it printed. */
        fprintf(stderr, "load-gen: no request succeeded\n");
        return 1;
    }
    return rc == MOMENTO_OK ? 0 : 1;
}
