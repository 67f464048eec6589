/* The metrics hook: one record per accepted request, handed to the
 * application just before the request's callback - on the completion
 * thread, or in dispatch mode on the dispatching thread for the requests a
 * shared answer calls back there - one call at a time (momento/metrics.h
 * has the promises; metrics.h, where it is called). */
#include "model/metrics.h"

#include "clock.h"
#include "model/result.h"

#include <string.h>

/* The config whose hook this thread is running under its lock, if any. */
static _Thread_local const momento_config *hook_running;

bool momento__metrics_hook_running(const momento_config *cfg)
{
    return hook_running == cfg;
}

static void emit(const momento_config *cfg, momento_request_metrics *m, int64_t submitted_ns,
                 const momento_result *r)
{
    int64_t now = momento__now_ns();
    m->size = sizeof(*m);
    m->error = r->error;
    m->grpc_status = r->grpc_status;
    m->outcome = (int)r->outcome;
    m->attempts = r->attempts > 0 ? (uint32_t)r->attempts : 0;
    m->transport = r->transport;
    /* A request whose submitter left no time (none does today) reads 0
     * rather than the age of the clock. */
    m->latency_ns = submitted_ns > 0 && now > submitted_ns ? (uint64_t)(now - submitted_ns) : 0;
    m->result = r;
    /* Without a lock only one thread calls the hook. With one, a hook call
     * of this thread's already holding it (a request the hook submitted
     * that ended at once: momento/metrics.h asks it not to) goes on
     * without it, rather than wait for itself. */
    if (!cfg->metrics_lock || hook_running == cfg) {
        cfg->metrics_fn(m, cfg->metrics_userdata);
        return;
    }
    pthread_mutex_lock(cfg->metrics_lock);
    hook_running = cfg;
    cfg->metrics_fn(m, cfg->metrics_userdata);
    hook_running = NULL;
    pthread_mutex_unlock(cfg->metrics_lock);
}

void momento__metrics_rpc(const momento_config *cfg, momento__rpc_id method, grpc_slice cache,
                          int64_t submitted_ns, grpc_slice request, const grpc_slice *msgs,
                          size_t n_msgs, const momento_result *r)
{
    momento_request_metrics m;
    memset(&m, 0, sizeof(m));
    m.method = momento__rpcs[method].name;
    /* The header's value is a slice without a terminator; a cache name is
     * at most MOMENTO_MAX_CACHE_NAME_BYTES (checked at submit), so a copy
     * on the stack always fits. */
    char name[MOMENTO_MAX_CACHE_NAME_BYTES + 1];
    size_t len = GRPC_SLICE_LENGTH(cache);
    if (len) {
        if (len > MOMENTO_MAX_CACHE_NAME_BYTES)
            len = MOMENTO_MAX_CACHE_NAME_BYTES;
        memcpy(name, GRPC_SLICE_START_PTR(cache), len);
        name[len] = '\0';
        m.cache = name;
    }
    m.request_bytes = GRPC_SLICE_LENGTH(request);
    for (size_t i = 0; i < n_msgs; i++)
        m.response_bytes += GRPC_SLICE_LENGTH(msgs[i]);
    emit(cfg, &m, submitted_ns, r);
}

void momento__metrics_shared(const momento_config *cfg, const char *method, const char *cache,
                             int64_t submitted_ns, uint32_t flags, const momento_result *r)
{
    momento_request_metrics m;
    memset(&m, 0, sizeof(m));
    m.method = method;
    m.cache = cache;
    m.flags = flags;
    emit(cfg, &m, submitted_ns, r);
}
