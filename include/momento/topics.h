/*
 * libmomento topics: Momento's publish / subscribe. A topic lives in a cache
 * (the cache must exist) and is named by any non-empty UTF-8 string; it
 * needs no creation. Publishing is an ordinary request (momento.h's rules:
 * async with exactly one callback, or `_sync`). Subscribing opens a
 * long-lived server stream that calls you back once per event until it
 * ends, and that survives broken connections by itself.
 *
 * What a subscription promises:
 *  - Items arrive in the topic's order, each with its topic sequence number
 *    and sequence page: within one page, the next item is number + 1.
 *  - When the stream breaks (server restart, UNAVAILABLE, a connection gone
 *    quiet, ...), the subscription reports MOMENTO_TOPIC_CONNECTION_LOST,
 *    waits `resubscribe_delay_ms`, and subscribes again from the last
 *    number + 1 of the last page, over and over until it succeeds or is
 *    ended. Items published meanwhile are then replayed by the server; what
 *    cannot be replayed is reported as a MOMENTO_TOPIC_DISCONTINUITY, never
 *    skipped in silence. The library checks this itself too: a gap in the
 *    numbers of a page is reported as a discontinuity, a repeated number is
 *    dropped.
 *  - Exactly one MOMENTO_TOPIC_END event ends every subscription that
 *    momento_topic_subscribe() accepted: after momento_topic_unsubscribe()
 *    (error 0), an error that ends it (its `error`), or
 *    momento_client_free() (MOMENTO_ERR_CLOSED). No event follows it.
 *
 * Events run on the client's completion thread, one at a time per
 * subscription; the rules of momento.h's callbacks apply (do not block;
 * blocking calls on the same client from there return
 * MOMENTO_ERR_WOULD_DEADLOCK; async calls are fine).
 */
#ifndef MOMENTO_TOPICS_H
#define MOMENTO_TOPICS_H

#include "momento/momento.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Publish `value` to `topic` of `cache`: `_text` sends it as text (it must
 * be valid UTF-8 without NUL bytes, which momento-local refuses in a
 * string: send such a value as bytes), the other as bytes; subscribers see
 * which it was.
 * `topic` is a NUL-terminated UTF-8 name of 1+ bytes; `value` may be empty
 * (NULL only with length 0). Outcome SUCCESS: Momento accepted it (it
 * answers so when nobody listens, too). Return codes and `opts` as
 * momento.h's async calls. A value beyond the server's limit fails in the
 * callback with MOMENTO_ERR_LIMIT_EXCEEDED. Publish is not retried (a
 * repeated publish would be a second item).
 */
MOMENTO_EXPORT int momento_topic_publish(momento_client *c, const char *cache, const char *topic,
                                         const void *value, size_t value_len,
                                         const momento_request_options *opts,
                                         momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_topic_publish_text(momento_client *c, const char *cache,
                                              const char *topic, const char *text,
                                              size_t text_len,
                                              const momento_request_options *opts,
                                              momento_callback cb, void *userdata);
MOMENTO_EXPORT int momento_topic_publish_sync(momento_client *c, const char *cache,
                                              const char *topic, const void *value,
                                              size_t value_len,
                                              const momento_request_options *opts,
                                              momento_result **ret);
MOMENTO_EXPORT int momento_topic_publish_text_sync(momento_client *c, const char *cache,
                                                   const char *topic, const char *text,
                                                   size_t text_len,
                                                   const momento_request_options *opts,
                                                   momento_result **ret);

typedef struct momento_subscription momento_subscription;

typedef enum momento_topic_event_kind {
    /* The stream is up: the first message of a subscription's stream
     * arrived (its first connection and each reconnection). */
    MOMENTO_TOPIC_CONNECTED = 1,
    /* A published item: value, text or bytes, sequence number and page,
     * publisher id. */
    MOMENTO_TOPIC_ITEM = 2,
    /* Items were skipped: after `last_sequence_number` (0: unknown) the
     * stream goes on after `new_sequence_number` of `new_sequence_page`
     * (a page other than the one before means the topic was reset: the
     * server restarted, for one). Sent by the server, or found by the
     * library (`from_server` 0). */
    MOMENTO_TOPIC_DISCONTINUITY = 3,
    /* The server's keep-alive; delivered only with
     * MOMENTO_SUBSCRIBE_HEARTBEATS (always counted in the stats). */
    MOMENTO_TOPIC_HEARTBEAT = 4,
    /* The stream broke (`error` says how); the subscription will subscribe
     * again after its delay. Once per break, not per failed attempt. */
    MOMENTO_TOPIC_CONNECTION_LOST = 5,
    /* The last event: `error` 0 after momento_topic_unsubscribe(), else why
     * it ended (MOMENTO_ERR_CACHE_NOT_FOUND, MOMENTO_ERR_CLOSED, a first
     * stream that failed or timed out, an error the SDKs do not retry:
     * authentication, permission, not found, cancelled). */
    MOMENTO_TOPIC_END = 6
} momento_topic_event_kind;

/*
 * One event. Pointers are borrowed: valid until the callback returns.
 * Fields a kind does not use are 0 / NULL. Fields are only ever appended.
 */
typedef struct momento_topic_event {
    momento_topic_event_kind kind;
    /* ITEM */
    const uint8_t *value;
    size_t value_len;
    /* 1: published as text, and valid UTF-8; 0: bytes (also text a
     * server sent that is not valid UTF-8, delivered as its bytes) */
    int is_text;
    uint64_t sequence_number;
    uint64_t sequence_page;
    const char *publisher_id;      /* NUL-terminated; "" when none */
    /* DISCONTINUITY */
    uint64_t last_sequence_number;
    uint64_t new_sequence_number;
    uint64_t new_sequence_page;
    int from_server;
    /* CONNECTION_LOST and END */
    int error;                     /* a momento_error; 0 for an unsubscribe */
    const char *message;           /* NUL-terminated explanation; "" when none */
} momento_topic_event;

/* `sub` is the subscription the event is for (valid at least until the
 * END event's callback returns). */
typedef void (*momento_topic_callback)(momento_subscription *sub, const momento_topic_event *ev,
                                       void *userdata);

/* Deliver MOMENTO_TOPIC_HEARTBEAT events too. */
#define MOMENTO_SUBSCRIBE_HEARTBEATS 0x1u
/* A server stream of its own. Without it, subscriptions of one client to
 * the same topic with the same timings (and no resume position) share one
 * stream whose items the library hands to each: the server sends each
 * item once per client, not once per subscription. A subscription that
 * joins a stream already up hears from then on, as a new stream would;
 * its events and END are its own either way. */
#define MOMENTO_SUBSCRIBE_OWN_STREAM 0x2u

typedef struct momento_subscribe_options {
    size_t size;                   /* sizeof(momento_subscribe_options) */
    /* Start from this sequence number of this page (a subscriber that
     * kept them from an earlier subscription: the last sequence number it
     * saw plus one, and that item's page); 0, 0 = from now on. */
    uint64_t resume_at_sequence_number;
    uint64_t sequence_page;
    /* How long each stream may take to bring its first message; 0 = the
     * client's timeout. The first stream failing so ends the subscription
     * (MOMENTO_ERR_TIMEOUT); a later one counts as a break. */
    uint32_t first_message_timeout_ms;
    /* The wait before each resubscribe; 0 = 500 (the official SDKs'). */
    uint32_t resubscribe_delay_ms;
    /* A stream that brings nothing (not even a heartbeat) for this long
     * is taken as broken; 0 = 30000, UINT32_MAX = never. */
    uint32_t idle_timeout_ms;
    unsigned flags;                /* MOMENTO_SUBSCRIBE_* */
} momento_subscribe_options;

/* Names only `size` (as MOMENTO_REQUEST_OPTIONS_INIT, momento.h): every
 * other field starts 0, its default, however many are appended. C only,
 * as that one is; MOMENTO_SUBSCRIBE_OPTIONS(...) gives a pointer to a
 * compound literal with the designated initializers it is given. */
#define MOMENTO_SUBSCRIBE_OPTIONS_INIT {.size = sizeof(momento_subscribe_options)}
#define MOMENTO_SUBSCRIBE_OPTIONS(...)                                                            \
    (&(const momento_subscribe_options){.size = sizeof(momento_subscribe_options), __VA_ARGS__})

/*
 * Subscribes to `topic` of `cache` (arguments as momento_topic_publish();
 * `opts` NULL = defaults). Returns at once:
 *  - MOMENTO_OK: accepted; events follow, the last being exactly one END
 *    (a cache that does not exist is an END with
 *    MOMENTO_ERR_CACHE_NOT_FOUND). With `ret` non-NULL, *ret is your
 *    reference to the subscription: valid until momento_subscription_free(),
 *    which you must call (from any thread, a callback included), before or
 *    after the END. With `ret` NULL the subscription runs until an error or
 *    the client's free ends it.
 *  - MOMENTO_ERR_INVALID_ARGUMENT (bad arguments), MOMENTO_ERR_NO_MEMORY,
 *    MOMENTO_ERR_CLOSED, or MOMENTO_ERR_LIMIT_EXCEEDED when it needs a
 *    stream of its own and the client's stream channels hold as many as
 *    Momento allows (momento_config_set_stream_channels() x
 *    MOMENTO_STREAMS_PER_CONNECTION; momento_refusal_reason() says so):
 *    nothing started, no event, *ret untouched.
 * Any thread.
 */
MOMENTO_EXPORT int momento_topic_subscribe(momento_client *c, const char *cache,
                                           const char *topic,
                                           const momento_subscribe_options *opts,
                                           momento_topic_callback cb, void *userdata,
                                           momento_subscription **ret);

/*
 * Like momento_topic_subscribe(), then waits until the subscription is
 * connected (returns 0 with *ret set; events go on arriving at `cb`) or has
 * ended (returns its END's error, the END event delivered to `cb` first,
 * and frees the subscription: *ret untouched). MOMENTO_ERR_WOULD_DEADLOCK
 * from the client's completion thread.
 */
MOMENTO_EXPORT int momento_topic_subscribe_sync(momento_client *c, const char *cache,
                                                const char *topic,
                                                const momento_subscribe_options *opts,
                                                momento_topic_callback cb, void *userdata,
                                                momento_subscription **ret);

/* Ends the subscription: its stream is cancelled, a resubscribe waiting is
 * dropped, and the END event (error 0) follows - unless it has ended
 * already, when this does nothing. Any thread, a callback included.
 * NULL-safe. */
MOMENTO_EXPORT void momento_topic_unsubscribe(momento_subscription *sub);

/* Unsubscribes (as above) and gives up your reference: `sub` must not be
 * used after this. The END event still reaches the callback if it has not
 * yet. Any thread, a callback included. NULL-safe. */
MOMENTO_EXPORT void momento_subscription_free(momento_subscription *sub);

typedef struct momento_subscription_stats {
    uint64_t items;               /* ITEM events delivered */
    uint64_t heartbeats;          /* heartbeats received */
    uint64_t discontinuities;     /* DISCONTINUITY events delivered */
    uint64_t reconnects;          /* streams opened after the first */
    uint64_t connection_losses;   /* CONNECTION_LOST events delivered */
    uint64_t duplicates_dropped;  /* items with a number already seen */
    uint64_t last_sequence_number; /* of the last item (or discontinuity); 0 = none */
    uint64_t sequence_page;
    int connected;                /* a stream is up right now */
    int ended;                    /* the END event has been delivered */
} momento_subscription_stats;

/* Copies the counters into *ret (at most `size` bytes: pass
 * sizeof(momento_subscription_stats)). Returns 0 or
 * MOMENTO_ERR_INVALID_ARGUMENT. Any thread. */
MOMENTO_EXPORT int momento_subscription_stats_get(const momento_subscription *sub,
                                                  momento_subscription_stats *ret, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* MOMENTO_TOPICS_H */
