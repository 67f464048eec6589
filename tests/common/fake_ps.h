/* A protosocket server for what momento-local never does: replies out of
 * order, split a byte at a time or merged into one write, replies for ids
 * nobody sent, CANCEL frames instead of replies, silence, a connection cut
 * in the middle of a frame, a refused Authenticate, a frame over the size
 * limit. One thread, plaintext, 127.0.0.1 on a free port, the codec of
 * common/ps_wire.h; it records every frame it receives, so that a test can
 * check what the client sent (auth first on each connection, a CANCEL with
 * the right id). Get, set and delete are answered from an in-memory map
 * (a miss is NOT_FOUND "Key not found", as Momento's server says it). */
#ifndef MOMENTO_FAKE_PS_H
#define MOMENTO_FAKE_PS_H

#include "ps_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tu_ps tu_ps;

/* How the fake answers the commands the mode applies to (all of them, or
 * those for the key tu_ps_set_target() names; the others are answered at
 * once). Authenticate is answered OK at once in every mode but
 * REFUSE_AUTH (and after tu_ps_set_auth_delay()'s delay). */
typedef enum tu_ps_mode {
    TU_PS_NORMAL,      /* each reply at once, in one write */
    TU_PS_REVERSE,     /* hold `n` commands, then answer them last first */
    TU_PS_MERGE,       /* hold `n` commands, then answer them in one write */
    TU_PS_SPLIT,       /* each reply written a byte at a time, 1 ms apart */
    TU_PS_UNKNOWN_ID,  /* before each reply, a reply for an id never sent */
    TU_PS_CANCEL,      /* a CANCEL control frame for the id instead of a reply */
    TU_PS_SILENT,      /* read and recorded, never answered */
    TU_PS_CUT,         /* hold `n`, write half of the first reply and close the
                        * connection; the mode is NORMAL from then on */
    TU_PS_REFUSE_AUTH, /* Authenticate answered CommandError UNAUTHENTICATED */
    TU_PS_OVERSIZE     /* hold `n`, then a frame prefix of 5 MiB and some bytes */
} tu_ps_mode;

/* Starts a fake in `mode` (`n`: the held modes' count, at least 1). Aborts
 * the test on failure. */
tu_ps *tu_ps_start(tu_ps_mode mode, size_t n);
/* Changes the mode for the commands read from now on. */
void tu_ps_set_mode(tu_ps *f, tu_ps_mode mode, size_t n);
/* The mode applies only to commands for `key` (NULL: to all). Copied. */
void tu_ps_set_target(tu_ps *f, const char *key);
/* Each Authenticate is answered `ms` after it came (frames keep being read
 * and recorded meanwhile). */
void tu_ps_set_auth_delay(tu_ps *f, int ms);
/* Stores `value` at `key`, as a set would. */
void tu_ps_put(tu_ps *f, const char *key, const char *value);
/* "127.0.0.1:port", for momento_config_set_protosocket_endpoint(). */
const char *tu_ps_endpoint(const tu_ps *f);
/* Connections accepted so far. */
size_t tu_ps_connections(tu_ps *f);

/* A frame the fake received: on its `conn`-th connection (0-based, in the
 * order they were accepted), when (CLOCK_MONOTONIC ns), the command's
 * envelope and key (cut to 63 bytes). */
typedef struct tu_ps_frame {
    size_t conn;
    int64_t at_ns;
    uint64_t id;
    uint32_t control;
    ps_kind kind;
    char key[64];
} tu_ps_frame;
/* Frames received so far; the i-th of them into *out (false: no such). */
size_t tu_ps_frame_count(tu_ps *f);
bool tu_ps_frame_at(tu_ps *f, size_t i, tu_ps_frame *out);
/* The first frame of a command for `key` (a get, set or delete): true with
 * *out set. */
bool tu_ps_find_key(tu_ps *f, const char *key, tu_ps_frame *out);
/* Whether a CANCEL control frame for `id` came on connection `conn`. */
bool tu_ps_saw_cancel(tu_ps *f, size_t conn, uint64_t id);
/* When the Authenticate of connection `conn` was answered (0: not yet). */
int64_t tu_ps_auth_answered_ns(tu_ps *f, size_t conn);
void tu_ps_stop(tu_ps *f);

#endif
