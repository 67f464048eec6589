/* gRPC channels: one or more to the data endpoint, one to the control
 * endpoint (and one to the token endpoint where that is another address),
 * each with every method of its plane registered once so that calls skip
 * per-call path parsing (registered calls). */
#include "transport/grpc/channel.h"

#include "base/alloc.h"
#include "clock.h"
#include "grpc_util.h"
#include "model/config.h"
#include "model/credentials.h"
#include "model/validate.h"

#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `target`'s host: without the port and an IPv6 address's brackets. */
static void host_of(const char *target, char *out, size_t n)
{
    const char *colon = strrchr(target, ':');
    size_t len = colon ? (size_t)(colon - target) : strlen(target);
    if (len >= 2 && target[0] == '[' && target[len - 1] == ']') {
        target++;
        len -= 2;
    }
    snprintf(out, n, "%.*s", (int)len, target);
}

/* TLS that accepts any server certificate (momento_config_set_tls_verify(
 * cfg, 0)): gRPC's TLS credentials with no verifier. */
static grpc_channel_credentials *unverified_tls(void)
{
    grpc_tls_credentials_options *o = grpc_tls_credentials_options_create();
    if (!o)
        return NULL;
    grpc_tls_certificate_verifier *v = grpc_tls_certificate_verifier_no_op_create();
    grpc_tls_credentials_options_set_verify_server_cert(o, 0);
    grpc_tls_credentials_options_set_check_call_host(o, 0);
    grpc_tls_credentials_options_set_certificate_verifier(o, v);
    grpc_tls_certificate_verifier_release(v); /* the options hold their own */
    return grpc_tls_credentials_create(o); /* takes the options */
}

static grpc_channel *open_channel(const momento_config *cfg, const momento_credentials *creds,
                                  const char *target)
{
    grpc_arg args[14];
    size_t n = 0;
    /* The library applies its own retry rule; gRPC's hidden retries would
     * repeat non-idempotent RPCs and cost ~9,000 instructions per call. */
    args[n++] = momento__int_arg(GRPC_ARG_ENABLE_RETRIES, 0);
    /* Without a local subchannel pool, channels to one target share a single
     * connection, which would defeat num_channels. */
    args[n++] = momento__int_arg(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    /* No service config from DNS TXT records, as every SDK set in 2025
     * (JS #1523, Go #589): the library's own settings are the whole
     * config, and a lookup per channel costs a connect's time. */
    args[n++] = momento__int_arg(GRPC_ARG_SERVICE_CONFIG_DISABLE_RESOLUTION, 1);
    /* gRPC backs off up to 120 s between reconnection attempts; a cache
     * client should find a restarted server within seconds. (Not
     * GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC also uses that as the minimum
     * connect timeout, and 250 ms would fail any slower handshake.) */
    args[n++] = momento__int_arg(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 250);
    args[n++] = momento__int_arg(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    args[n++] = momento__int_arg(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, (int)cfg->max_message_bytes);
    args[n++] = momento__int_arg(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, (int)cfg->max_message_bytes);
    if (cfg->keepalive_ms) {
        args[n++] = momento__int_arg(GRPC_ARG_KEEPALIVE_TIME_MS, (int)cfg->keepalive_ms);
        args[n++] = momento__int_arg(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, (int)cfg->keepalive_timeout_ms);
        args[n++] = momento__int_arg(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
        args[n++] = momento__int_arg(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    }
    /* A connect address: the endpoint's name still goes in SNI, the
     * :authority and the certificate check. */
    char host[MOMENTO__HOST_PORT_MAX + 1];
    const char *dial = target;
    if (cfg->connect_address[0]) {
        dial = cfg->connect_address;
        host_of(target, host, sizeof(host));
        args[n++] = (grpc_arg){.type = GRPC_ARG_STRING,
                               .key = GRPC_ARG_DEFAULT_AUTHORITY,
                               .value.string = (char *)target};
        if (creds->tls)
            args[n++] = (grpc_arg){.type = GRPC_ARG_STRING,
                                   .key = GRPC_SSL_TARGET_NAME_OVERRIDE_ARG,
                                   .value.string = host};
    }
    grpc_channel_args ch_args = {n, args};

    grpc_channel_credentials *gc =
        !creds->tls        ? grpc_insecure_credentials_create()
        : cfg->tls_verify ? grpc_ssl_credentials_create(cfg->tls_roots_pem, NULL, NULL, NULL)
                          : unverified_tls();
    if (!gc)
        return NULL;
    grpc_channel *ch = grpc_channel_create(dial, gc, &ch_args);
    grpc_channel_credentials_release(gc);
    return ch;
}

/* Which channel an RPC of `plane` goes to. */
enum endpoint { EP_DATA, EP_CONTROL, EP_TOKEN };

static enum endpoint endpoint_of(momento__plane plane)
{
    return plane == MOMENTO__PLANE_CONTROL || plane == MOMENTO__PLANE_AUTH ? EP_CONTROL
           : plane == MOMENTO__PLANE_TOKEN ? EP_TOKEN
                                           : EP_DATA;
}

/* A new channel for the slot, with the RPCs the library makes of the
 * slot's endpoint registered, and of `also`, a second endpoint whose RPCs
 * it carries too (the token service on the control channel of a local
 * server), or the same. It holds the slot's reference; NULL if gRPC
 * refused. */
static momento__channel *make_channel(const momento__channels *ch, momento__channel_slot *slot,
                                      int64_t now)
{
    momento__channel *mc = momento__calloc(1, sizeof(*mc));
    if (!mc)
        return NULL;
    mc->channel = open_channel(ch->cfg, ch->creds, slot->target);
    if (!mc->channel) {
        free(mc);
        return NULL;
    }
    for (int m = 0; m < MOMENTO__RPC_COUNT; m++) {
        int e = (int)endpoint_of(momento__rpcs[m].plane);
        if (!momento__rpcs[m].server_only && (e == slot->ep || e == slot->also))
            mc->registered[m] =
                grpc_channel_register_call(mc->channel, momento__rpcs[m].path, NULL, NULL);
    }
    mc->born_ns = now;
    mc->slot = slot;
    atomic_init(&mc->refs, 1);
    return mc;
}

static int setup(momento__channels *ch, momento__channel_slot *slot, const char *target,
                 enum endpoint ep, enum endpoint also, int64_t now)
{
    slot->target = target;
    slot->ep = (int)ep;
    slot->also = (int)also;
    atomic_init(&slot->last_used_ns, now);
    atomic_init(&slot->taking, 0);
    atomic_init(&slot->streams, 0);
    atomic_init(&slot->suspect, false);
    atomic_init(&slot->stuck_renewed_ns, 0);
    momento__channel *mc = make_channel(ch, slot, now);
    atomic_init(&slot->current, mc);
    return mc ? MOMENTO_OK : MOMENTO_ERR_NO_MEMORY;
}

static void destroy(momento__channel *mc)
{
    grpc_channel_destroy(mc->channel);
    free(mc);
}

#define LAST_USED_GRAIN_NS 1000000ll

void (*momento__channel_take_pause)(void);

/* With ch->lock: destroys the replaced channels no call uses any more
 * (all of them when closing). A replaced channel with no reference may
 * still be in a thread's hands between its load of `slot->current` and its
 * reference (momento__channels_take); the slot's `taking` counts those
 * threads. Read after the swap (both sequentially consistent), 0 means
 * that every thread that loaded the old channel has made its reference
 * (then `refs` shows it) and every later one loads the new channel. A
 * nonzero count keeps the slot's replaced channels until a later sweep.
 * (It replaces a 10 s grace period after the swap, which was a guess: a
 * thread stopped longer than that between its load and its reference, by
 * SIGSTOP or a VM or Lambda freeze, incremented a freed channel.) */
static void sweep_locked(momento__channels *ch, bool all)
{
    for (momento__channel **p = &ch->retired; *p;) {
        momento__channel *mc = *p;
        if (all || (atomic_load(&mc->slot->taking) == 0 && atomic_load(&mc->refs) == 0)) {
            *p = mc->next_retired;
            destroy(mc);
        } else {
            p = &mc->next_retired;
        }
    }
}

/* Replaces the slot's channel `seen` unless another thread already did. If
 * no new channel can be made, the old one stays: better than none. */
static void renew(momento__channels *ch, momento__channel_slot *slot, momento__channel *seen,
                  int64_t now)
{
    pthread_mutex_lock(&ch->lock);
    if (atomic_load(&slot->current) == seen) {
        momento__channel *fresh = make_channel(ch, slot, now);
        if (fresh) {
            atomic_store(&slot->current, fresh); /* seq_cst: see sweep_locked() */
            seen->next_retired = ch->retired;
            ch->retired = seen;
            atomic_fetch_sub(&seen->refs, 1); /* the slot's */
        }
    }
    sweep_locked(ch, false);
    pthread_mutex_unlock(&ch->lock);
}

/* Waits until the channel is READY or the deadline passes. */
static int connect_now(grpc_channel *ch, uint32_t timeout_ms)
{
    gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                         gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
    grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
    /* The official SDKs' eager connection fails with CONNECTION_ERROR. */
    int rc = MOMENTO_ERR_CONNECTION;
    for (;;) {
        grpc_connectivity_state st = grpc_channel_check_connectivity_state(ch, 1);
        if (st == GRPC_CHANNEL_READY) {
            rc = MOMENTO_OK;
            break;
        }
        grpc_channel_watch_connectivity_state(ch, st, deadline, cq, NULL);
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (!ev.success) /* the deadline passed with no state change */
            break;
    }
    momento__cq_drain(cq, NULL, NULL);
    grpc_completion_queue_destroy(cq);
    return rc;
}

/* `n` slots on the cache endpoint into *ret, data calls' or streams' alike
 * (a stream is a data-plane call). Returns 0, or -1 when out of memory;
 * *ret is stored before any slot is set up, so that
 * momento__channels_close() gives back what a failure left. */
static int pool_open(momento__channels *ch, momento__channel_slot **ret, uint32_t n, int64_t now)
{
    momento__channel_slot *slots = *ret = momento__calloc(n, sizeof(*slots));
    if (!slots)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        if (setup(ch, &slots[i], ch->creds->cache_endpoint, EP_DATA, EP_DATA, now) < 0)
            return -1;
    return 0;
}

int momento__channels_open(momento__channels *ch, const momento_config *cfg,
                           const momento_credentials *creds)
{
    int64_t now = momento__now_ns();
    ch->cfg = cfg;
    ch->creds = creds;
    ch->max_idle_ns = (int64_t)cfg->max_idle_ms * 1000000;
    ch->max_age_ns = (int64_t)cfg->max_client_age_ms * 1000000;
    ch->retired = NULL;
    pthread_mutex_init(&ch->lock, NULL);
    ch->n_data = cfg->num_channels;
    if (pool_open(ch, &ch->data, ch->n_data, now) < 0)
        return MOMENTO_ERR_NO_MEMORY;
    /* Connected on first use: a client that never subscribes never opens
     * them. */
    ch->n_stream = cfg->stream_channels;
    if (pool_open(ch, &ch->stream, ch->n_stream, now) < 0)
        return MOMENTO_ERR_NO_MEMORY;
    /* One connection less for every client of a server that answers both
     * services on one address. */
    bool token_apart = strcmp(creds->token_endpoint, creds->control_endpoint) != 0;
    if (setup(ch, &ch->control, creds->control_endpoint, EP_CONTROL,
              token_apart ? EP_CONTROL : EP_TOKEN, now) < 0)
        return MOMENTO_ERR_NO_MEMORY;
    if (token_apart && setup(ch, &ch->token, creds->token_endpoint, EP_TOKEN, EP_TOKEN, now) < 0)
        return MOMENTO_ERR_NO_MEMORY;
    if (cfg->eager_connect_ms) {
        for (uint32_t i = 0; i < ch->n_data; i++)
            if (connect_now(atomic_load(&ch->data[i].current)->channel, cfg->eager_connect_ms) < 0)
                return MOMENTO_ERR_CONNECTION;
    }
    return MOMENTO_OK;
}

/* A reference to the slot's current channel, taken inside the slot's
 * `taking` count, which keeps a channel replaced meanwhile from being
 * destroyed before the reference shows (sweep_locked()). Any thread. */
static inline momento__channel *ref_current(momento__channel_slot *slot)
{
    atomic_fetch_add(&slot->taking, 1);
    momento__channel *mc = atomic_load(&slot->current); /* seq_cst: see sweep_locked() */
    if (momento__channel_take_pause)
        momento__channel_take_pause();
    atomic_fetch_add_explicit(&mc->refs, 1, memory_order_relaxed);
    /* Release: whoever reads the count back to 0 sees the reference. */
    atomic_fetch_sub_explicit(&slot->taking, 1, memory_order_release);
    return mc;
}

static momento__channel *take_slot(momento__channels *ch, momento__channel_slot *slot);

momento__channel *momento__channels_take(momento__channels *ch, momento__plane plane)
{
    momento__channel_slot *slot;
    if (plane == MOMENTO__PLANE_CONTROL || plane == MOMENTO__PLANE_AUTH)
        slot = &ch->control;
    else if (plane == MOMENTO__PLANE_TOKEN)
        slot = atomic_load(&ch->token.current) ? &ch->token : &ch->control;
    else
        slot = &ch->data[atomic_fetch_add_explicit(&ch->next, 1, memory_order_relaxed) % ch->n_data];
    return take_slot(ch, slot);
}

momento__channel *momento__channels_take_stream(momento__channels *ch,
                                                momento__channel_slot **ret_slot)
{
    /* The least loaded; a place taken with a compare-and-swap, so that two
     * threads cannot both take a slot's last one. */
    for (;;) {
        momento__channel_slot *best = NULL;
        unsigned n_best = MOMENTO_STREAMS_PER_CONNECTION;
        for (uint32_t i = 0; i < ch->n_stream; i++) {
            unsigned n = atomic_load_explicit(&ch->stream[i].streams, memory_order_relaxed);
            if (n < n_best) {
                best = &ch->stream[i];
                n_best = n;
            }
        }
        if (!best) {
            *ret_slot = NULL;
            return NULL;
        }
        if (atomic_compare_exchange_weak(&best->streams, &n_best, n_best + 1)) {
            *ret_slot = best;
            return take_slot(ch, best);
        }
    }
}

void momento__channels_stream_done(momento__channel_slot *slot)
{
    if (slot)
        atomic_fetch_sub(&slot->streams, 1);
}

#define STUCK_RENEW_NS 1000000000ll

void momento__channel_failed(momento__channel *mc)
{
    if (mc)
        atomic_store_explicit(&mc->slot->suspect, true, memory_order_relaxed);
}

/* After a failure on the slot: a channel in TRANSIENT_FAILURE waits out
 * gRPC's reconnect backoff (up to 2 s here) failing every call at once; a
 * new one connects now. At most once a second per slot, so that a server
 * that is down is not met with a connection per request. */
static momento__channel *unstick(momento__channels *ch, momento__channel_slot *slot,
                                 momento__channel *mc)
{
    if (!atomic_exchange(&slot->suspect, false) ||
        grpc_channel_check_connectivity_state(mc->channel, 0) != GRPC_CHANNEL_TRANSIENT_FAILURE)
        return mc;
    int64_t now = momento__now_ns();
    int64_t last = atomic_load(&slot->stuck_renewed_ns);
    if (now - last < STUCK_RENEW_NS ||
        !atomic_compare_exchange_strong(&slot->stuck_renewed_ns, &last, now))
        return mc;
    renew(ch, slot, mc, now);
    momento__channel_put(mc);
    return ref_current(slot);
}

static momento__channel *take_slot(momento__channels *ch, momento__channel_slot *slot)
{
    /* Everything below reads the channel after its reference is taken. */
    momento__channel *mc = ref_current(slot);
    if (atomic_load_explicit(&slot->suspect, memory_order_relaxed))
        mc = unstick(ch, slot, mc);
    if (ch->max_idle_ns || ch->max_age_ns) {
        /* The SDKs' idle wrapper: a connection idle past a load balancer's
         * timeout, or from before a serverless freeze, may be dead without
         * either side knowing; a new channel costs one connect instead of a
         * request's whole deadline. */
        int64_t now = momento__now_ns();
        int64_t last = atomic_load_explicit(&slot->last_used_ns, memory_order_relaxed);
        /* Written at most once a millisecond: every call of every thread
         * goes through here, and a shared line written per call costs
         * more than the clock. */
        if (now - last > LAST_USED_GRAIN_NS)
            atomic_store_explicit(&slot->last_used_ns, now, memory_order_relaxed);
        if ((ch->max_idle_ns && now - last > ch->max_idle_ns) ||
            (ch->max_age_ns && now - mc->born_ns > ch->max_age_ns)) {
            /* Renewing, this thread's reference keeps `mc` alive; the new
             * channel's is taken as above, but not checked again: it is
             * new. */
            renew(ch, slot, mc, now);
            momento__channel_put(mc);
            mc = ref_current(slot);
        }
    }
    return mc;
}

void momento__channel_put(momento__channel *mc)
{
    /* Destroying is left to the next renewal's sweep (or the close): this
     * runs per call and must stay one atomic operation. Release: the
     * sweep's load that reads 0 (sequentially consistent, so an acquire)
     * must see everything this holder did with the channel before it frees
     * it (TSan caught a relaxed put racing the sweep's free). On x86 it is
     * the same instruction. */
    if (mc)
        atomic_fetch_sub_explicit(&mc->refs, 1, memory_order_release);
}

static void close_slot(momento__channel_slot *slot)
{
    momento__channel *mc = atomic_load(&slot->current);
    if (mc)
        destroy(mc);
    atomic_store(&slot->current, NULL);
}

void momento__channels_close(momento__channels *ch)
{
    for (uint32_t i = 0; ch->data && i < ch->n_data; i++)
        close_slot(&ch->data[i]);
    free(ch->data);
    ch->data = NULL;
    for (uint32_t i = 0; ch->stream && i < ch->n_stream; i++)
        close_slot(&ch->stream[i]);
    free(ch->stream);
    ch->stream = NULL;
    if (ch->cfg) {
        close_slot(&ch->control);
        close_slot(&ch->token);
        pthread_mutex_lock(&ch->lock);
        sweep_locked(ch, true);
        pthread_mutex_unlock(&ch->lock);
        pthread_mutex_destroy(&ch->lock);
        ch->cfg = NULL;
    }
}
