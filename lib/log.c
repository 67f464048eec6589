/* Diagnostics: the library never writes to stdout or stderr. gRPC core's log
 * sink is redirected here, and everything goes to the application's callback
 * or nowhere. */
#include "log.h"

#include "momento/momento.h"

#include <grpc/support/log.h>
#include <pthread.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static momento_log_fn log_fn;
static void *log_userdata;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static void forward(gpr_log_func_args *args)
{
    momento_log_level level = args->severity == GPR_LOG_SEVERITY_ERROR  ? MOMENTO_LOG_ERROR
                              : args->severity == GPR_LOG_SEVERITY_INFO ? MOMENTO_LOG_INFO
                                                                         : MOMENTO_LOG_DEBUG;
    pthread_mutex_lock(&log_lock);
    momento_log_fn fn = log_fn;
    void *ud = log_userdata;
    pthread_mutex_unlock(&log_lock);
    if (fn)
        fn(level, args->message, ud);
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
