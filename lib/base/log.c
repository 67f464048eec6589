/* Diagnostics: the library never writes to stdout or stderr. gRPC core's log
 * sink is redirected here, and everything goes to the application's callback
 * or nowhere, with every live client's token cut out: gRPC's own traces
 * (GRPC_TRACE=http and others) print request headers, `authorization`
 * included. */
#include "base/log.h"

#include "base/alloc.h"
#include "momento/momento.h"

#include <grpc/support/log.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define REDACTED "[token]"

/* The tokens of the clients that exist, one entry per distinct token. */
typedef struct secret {
    struct secret *next;
    size_t refs;
    size_t len;
    char text[];
} secret;

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER; /* guards all below */
static momento_log_fn log_fn;
static void *log_userdata;
static secret *secrets;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

int momento__log_add_secret(const char *text)
{
    size_t len = strlen(text);
    if (len == 0)
        return MOMENTO_OK;
    pthread_mutex_lock(&log_lock);
    secret *s = secrets;
    while (s && (s->len != len || memcmp(s->text, text, len) != 0))
        s = s->next;
    if (!s && (s = momento__malloc(sizeof(*s) + len + 1)) != NULL) {
        s->refs = 0;
        s->len = len;
        memcpy(s->text, text, len + 1);
        s->next = secrets;
        secrets = s;
    }
    if (s)
        s->refs++;
    pthread_mutex_unlock(&log_lock);
    return s ? MOMENTO_OK : MOMENTO_ERR_NO_MEMORY;
}

void momento__log_remove_secret(const char *text)
{
    size_t len = strlen(text);
    if (len == 0)
        return;
    pthread_mutex_lock(&log_lock);
    for (secret **at = &secrets; *at; at = &(*at)->next) {
        secret *s = *at;
        if (s->len == len && memcmp(s->text, text, len) == 0) {
            if (--s->refs == 0) {
                *at = s->next;
                free(s);
            }
            break;
        }
    }
    pthread_mutex_unlock(&log_lock);
}

/* `message` with every secret replaced, newly allocated; NULL when it holds
 * none (or when the copy cannot be made: see forward()). The caller holds
 * log_lock. */
static char *redact(const char *message, bool *dropped)
{
    char *out = NULL;
    for (const secret *s = secrets; s; s = s->next) {
        const char *text = out ? out : message;
        if (!strstr(text, s->text))
            continue;
        /* Room for the worst case: as many occurrences as fit, each grown
         * to the placeholder. */
        size_t n = strlen(text);
        char *next = momento__malloc(n / s->len * sizeof(REDACTED) + n + 1);
        if (!next) {
            free(out);
            *dropped = true;
            return NULL;
        }
        char *o = next;
        for (const char *p = text, *hit; *p; p = hit + s->len) {
            hit = strstr(p, s->text);
            if (!hit) {
                strcpy(o, p);
                o += strlen(p);
                break;
            }
            memcpy(o, p, (size_t)(hit - p));
            o += hit - p;
            memcpy(o, REDACTED, sizeof(REDACTED) - 1);
            o += sizeof(REDACTED) - 1;
        }
        *o = '\0';
        free(out);
        out = next;
    }
    return out;
}

static void forward(gpr_log_func_args *args)
{
    momento_log_level level = args->severity == GPR_LOG_SEVERITY_ERROR  ? MOMENTO_LOG_ERROR
                              : args->severity == GPR_LOG_SEVERITY_INFO ? MOMENTO_LOG_INFO
                                                                         : MOMENTO_LOG_DEBUG;
    pthread_mutex_lock(&log_lock);
    momento_log_fn fn = log_fn;
    void *ud = log_userdata;
    bool dropped = false;
    char *clean = fn ? redact(args->message, &dropped) : NULL;
    pthread_mutex_unlock(&log_lock);
    /* A message that held a token but could not be cleaned is not passed
     * on: losing a line is better than leaking a key. */
    if (fn && !dropped)
        fn(level, clean ? clean : args->message, ud);
    free(clean);
}

static void install(void)
{
    gpr_set_log_function(forward);
}

void momento__log_install(void)
{
    pthread_once(&install_once, install);
}

void momento_set_log_callback(momento_log_fn fn, void *userdata)
{
    momento__log_install();
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_userdata = userdata;
    pthread_mutex_unlock(&log_lock);
}
