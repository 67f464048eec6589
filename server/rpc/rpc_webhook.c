/* The webhook service (PutWebhook, DeleteWebhook, ListWebhooks,
 * GetWebhookSecret, RotateWebhookSecret; docs/server.md "Webhooks"): the
 * checks, with Momento's statuses, before webhooks.c changes or reads the
 * registry. A control-plane RPC: the cache is named in the body, and
 * looked up here. */
#include "rpc/srv_rpc.h"

#include "core/srv_server.h"
#include "core/srv_topics.h"
#include "core/srv_webhooks.h"

#include "webhook.pb-c.h"

#include <stdlib.h>
#include <string.h>

/* The cache a request names, or NULL with the error set. */
static store_cache *find_cache(momento_local *s, srv_reply *r, const char *cache)
{
    size_t len = cache ? strlen(cache) : 0;
    if (!srv_check_cache_name(r, cache ? cache : "", len))
        return NULL;
    store_cache *c = store_find_cache(&s->store, cache, len);
    if (!c)
        srv_reply_error(r, GRPC_STATUS_NOT_FOUND, NULL, "cache not found: %.100s", cache);
    return c;
}

static bool check_webhook_name(srv_reply *r, const char *name)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "webhook name must not be empty");
        return false;
    }
    if (len > SRV_WEBHOOK_NAME_MAX_BYTES) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "webhook name must be at most %u bytes", SRV_WEBHOOK_NAME_MAX_BYTES);
        return false;
    }
    if (!momento__local_utf8_valid(name, len)) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "webhook name must be valid UTF-8");
        return false;
    }
    return true;
}

/* The webhook a request names: its cache exists and its name is one. */
static bool check_id(momento_local *s, srv_reply *r, const Webhook__WebhookId *id)
{
    if (!id) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "webhook_id must be given");
        return false;
    }
    return find_cache(s, r, id->cache_name) && check_webhook_name(r, id->webhook_name);
}

void srv_put_webhook(momento_local *s, store_cache *c, const ProtobufCMessage *msg, srv_reply *r)
{
    (void)c;
    const Webhook__PutWebhookRequest *req = (const Webhook__PutWebhookRequest *)msg;
    const Webhook__Webhook *w = req->webhook;
    if (!w) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "webhook must be given");
        return;
    }
    if (!check_id(s, r, w->webhook_id) || !srv_check_topic(r, w->topic_name))
        return;
    const Webhook__WebhookDestination *d = w->destination;
    if (!d || d->kind_case != WEBHOOK____WEBHOOK_DESTINATION__KIND_POST_URL || !d->post_url ||
        !*d->post_url) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL,
                        "the webhook's destination must be a post URL");
        return;
    }
    const char *problem = srv_webhooks_url_problem(d->post_url);
    if (problem) {
        srv_reply_error(r, GRPC_STATUS_INVALID_ARGUMENT, NULL, "%s", problem);
        return;
    }
    const char *secret;
    if (srv_webhooks_put(s, w->webhook_id->cache_name, w->webhook_id->webhook_name,
                         w->topic_name, d->post_url, &secret) < 0) {
        srv_reply_no_memory(r);
        return;
    }
    Webhook__PutWebhookResponse resp = WEBHOOK____PUT_WEBHOOK_RESPONSE__INIT;
    resp.secret_string = (char *)secret;
    srv_reply_add(r, &resp.base);
}

void srv_delete_webhook(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                        srv_reply *r)
{
    (void)c;
    const Webhook__DeleteWebhookRequest *req = (const Webhook__DeleteWebhookRequest *)msg;
    if (!check_id(s, r, req->webhook_id))
        return;
    /* A missing webhook is no error: deleting is idempotent (inferred). */
    srv_webhooks_delete(s, req->webhook_id->cache_name, req->webhook_id->webhook_name);
    Webhook__DeleteWebhookResponse resp = WEBHOOK____DELETE_WEBHOOK_RESPONSE__INIT;
    srv_reply_add(r, &resp.base);
}

void srv_list_webhooks(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                       srv_reply *r)
{
    (void)c;
    const Webhook__ListWebhookRequest *req = (const Webhook__ListWebhookRequest *)msg;
    if (!find_cache(s, r, req->cache_name))
        return;
    srv_webhook_view *v;
    long n = srv_webhooks_list(s, req->cache_name, &v);
    if (n < 0) {
        srv_reply_no_memory(r);
        return;
    }
    /* Messages on the stack and in one block, pointing at the registry's
     * strings; packed by srv_reply_add() before they go. */
    size_t each = sizeof(Webhook__Webhook) + sizeof(Webhook__WebhookId) +
                  sizeof(Webhook__WebhookDestination) + sizeof(Webhook__Webhook *);
    char *mem = malloc((size_t)(n ? n : 1) * each);
    if (!mem) {
        free(v);
        srv_reply_no_memory(r);
        return;
    }
    Webhook__Webhook **ptrs = (Webhook__Webhook **)mem;
    Webhook__Webhook *whs = (Webhook__Webhook *)(ptrs + n);
    Webhook__WebhookId *ids = (Webhook__WebhookId *)(whs + n);
    Webhook__WebhookDestination *ds = (Webhook__WebhookDestination *)(ids + n);
    for (long i = 0; i < n; i++) {
        webhook____webhook_id__init(&ids[i]);
        ids[i].cache_name = (char *)v[i].cache;
        ids[i].webhook_name = (char *)v[i].name;
        webhook____webhook_destination__init(&ds[i]);
        ds[i].kind_case = WEBHOOK____WEBHOOK_DESTINATION__KIND_POST_URL;
        ds[i].post_url = (char *)v[i].url;
        webhook____webhook__init(&whs[i]);
        whs[i].webhook_id = &ids[i];
        whs[i].topic_name = (char *)v[i].topic;
        whs[i].destination = &ds[i];
        ptrs[i] = &whs[i];
    }
    Webhook__ListWebhooksResponse resp = WEBHOOK____LIST_WEBHOOKS_RESPONSE__INIT;
    resp.n_webhook = (size_t)n;
    resp.webhook = ptrs;
    srv_reply_add(r, &resp.base);
    free(mem);
    free(v);
}

/* GetWebhookSecret and RotateWebhookSecret: the webhook's secret, a new
 * one first for a rotation; NOT_FOUND for a webhook the cache lacks. */
static const char *secret_of(momento_local *s, srv_reply *r, const char *cache, const char *name,
                             bool rotate)
{
    bool failed;
    const char *secret = srv_webhooks_secret(s, cache, name, rotate, &failed);
    if (failed)
        srv_reply_no_memory(r);
    else if (!secret)
        srv_reply_error(r, GRPC_STATUS_NOT_FOUND, NULL, "webhook not found: %.130s", name);
    return secret;
}

void srv_get_webhook_secret(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                            srv_reply *r)
{
    (void)c;
    const Webhook__GetWebhookSecretRequest *req = (const Webhook__GetWebhookSecretRequest *)msg;
    if (!find_cache(s, r, req->cache_name) || !check_webhook_name(r, req->webhook_name))
        return;
    const char *secret = secret_of(s, r, req->cache_name, req->webhook_name, false);
    if (!secret)
        return;
    Webhook__GetWebhookSecretResponse resp = WEBHOOK____GET_WEBHOOK_SECRET_RESPONSE__INIT;
    resp.cache_name = req->cache_name;
    resp.webhook_name = req->webhook_name;
    resp.secret_string = (char *)secret;
    srv_reply_add(r, &resp.base);
}

void srv_rotate_webhook_secret(momento_local *s, store_cache *c, const ProtobufCMessage *msg,
                               srv_reply *r)
{
    (void)c;
    const Webhook__RotateWebhookSecretRequest *req =
        (const Webhook__RotateWebhookSecretRequest *)msg;
    if (!check_id(s, r, req->webhook_id))
        return;
    const char *secret =
        secret_of(s, r, req->webhook_id->cache_name, req->webhook_id->webhook_name, true);
    if (!secret)
        return;
    Webhook__RotateWebhookSecretResponse resp = WEBHOOK____ROTATE_WEBHOOK_SECRET_RESPONSE__INIT;
    resp.secret_string = (char *)secret;
    srv_reply_add(r, &resp.base);
}
