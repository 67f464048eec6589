/* Where diagnostics go (log.c): the application's callback or nowhere. */
#ifndef MOMENTO_LOG_H
#define MOMENTO_LOG_H

/* Routes gRPC core's log to momento_set_log_callback(). Idempotent. */
void momento__log_install(void);

#endif
