/* Cancel tokens (cancel.c): what momento_cancel() reaches. Each request
 * given a token hangs a hook on it for as long as the request can still be
 * cancelled; momento_cancel() fires every hook once, under the token's lock,
 * so a hook's owner that removes its hook (momento__cancel_hook_remove)
 * knows no firing of it is under way or still to come.
 *
 * Lock order: a token's lock, then a coalescer's, then the batcher's, then a
 * client's. A hook runs with the token's lock held, so it must not call into
 * user code or take a token's lock; it hands the real work to the
 * completion thread. */
#ifndef MOMENTO_CANCEL_H
#define MOMENTO_CANCEL_H

#include "momento/momento.h"

#include <stdbool.h>

typedef struct momento__cancel_hook {
    struct momento__cancel_hook *prev, *next;
    void (*fire)(struct momento__cancel_hook *h);
    bool linked;
} momento__cancel_hook;

/* Hangs `h` (with `fire` set) on `t`. Returns 0, or MOMENTO_ERR_CANCELLED
 * when `t` is already cancelled (then `h` is not hung and never fires). */
int momento__cancel_hook_add(momento_cancel_token *t, momento__cancel_hook *h);
/* Takes `h` off `t` (a no-op when it is not on it). On return `h` is not
 * firing and will not fire: its memory may be reused. */
void momento__cancel_hook_remove(momento_cancel_token *t, momento__cancel_hook *h);

#endif
