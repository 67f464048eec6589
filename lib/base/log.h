/* Where diagnostics go (log.c): the application's callback or nowhere. */
#ifndef MOMENTO_LOG_H
#define MOMENTO_LOG_H

/* Routes gRPC core's log to momento_set_log_callback(). Idempotent. */
void momento__log_install(void);

/* While added (counted: add and remove in pairs), `text` is replaced by
 * "[token]" in every message passed to the log callback. "" is ignored.
 * Returns 0 or MOMENTO_ERR_NO_MEMORY. */
int momento__log_add_secret(const char *text);
void momento__log_remove_secret(const char *text);

#endif
