/* The three calls of srv_turns.h that work in long loops makes (turns.c),
 * for the modules below the server's core (the collections' structures)
 * that need nothing else of it. Server threads only; outside a call's
 * work each does nothing (srv_let_go() returns false). */
#ifndef MOMENTO_LOCAL_SRV_YIELD_H
#define MOMENTO_LOCAL_SRV_YIELD_H

#include <stdbool.h>

/* Once per step of a loop whose length a request or a collection sets. */
void srv_yield(void);
/* For work that reads nothing shared but the request's pinned keys and
 * its own memory: gives the turn up and returns true, or keeps it and
 * returns false. srv_take_back() after a true. */
bool srv_let_go(void);
void srv_take_back(void);

#endif
